"""The pipeline as a library: driven through `Stages` by a plain object over a real ledger, no grpc anywhere."""

from __future__ import annotations

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.errors import InfrastructureError
from hotfloat.ledger import Ledger, State
from hotfloat.validator import Outcome, Pipeline, StageRefused
from hotfloat.validator.standings import scores
from hotfloat.verdict import Status

CUBIN = b"\x7fELF pretend cubin"


def run(status: str, score: float, gate: str) -> Outcome:
    return Outcome(Status(status), [f"{status} run"], {"score": score, "decision": {"gate": gate}, "workload": {"seed": 7}})


class Scripted:
    """Answers each stage from a script; admission and qualification check they got the build back from the ledger."""

    def __init__(self, *qualifications: Outcome, scan: Exception | None = None):
        self.qualifications, self.scan_fault, self.seen = list(qualifications), scan, []

    def scan(self, archive, identity, on_progress):
        if self.scan_fault is not None:
            raise self.scan_fault
        return Outcome(Status.PASS, [], {"clean": True})

    def build(self, archive, identity, on_progress):
        return Outcome(Status.PASS, ["built"], {"arch": "sm_90"}, {"k.cubin": CUBIN})

    def admit(self, archive, identity, built, on_progress):
        self.seen.append(built)
        return Outcome(Status.PASS, [], {"device": "cpu"})

    def qualify(self, archive, identity, built, on_progress):
        self.seen.append(built)
        return self.qualifications.pop(0)


@pytest.fixture
def submitted(make_bundle, tmp_path):
    led = Ledger(tmp_path / "l.db")
    sub, _ = led.receive(pack(load_bundle(make_bundle(name="a"))))
    yield led, sub.id
    led.close()


@pytest.mark.parametrize(("second", "ends"), [
    (run("PASS", 0.03, "PASS"), State.SCORED),
    (run("FAIL", 0.0, "FAIL"), State.FAILED),
    (run("FAIL", 0.0, "PASS"), State.NO_DECISION),
    (run("NO_DECISION", 0.0, "N/A"), State.NO_DECISION),
])
def test_the_score_stage_settles_by_the_one_rule(submitted, second, ends):
    led, sid = submitted
    stages = Scripted(run("PASS", 0.05, "PASS"), second)
    Pipeline(led, stages, through=State.SCORED, workers=1, backoff_s=0).run()
    sub = led.get(sid)
    assert sub.state is ends, sub.reason
    assert all(b.status is Status.PASS and b.artifacts == {"k.cubin": CUBIN} and b.evidence == {"arch": "sm_90"}
               for b in stages.seen) and len(stages.seen) == 3
    assert scores(led).get(sid, (None, None))[1] == (0.03 if ends is State.SCORED else None)
    if ends is State.SCORED:
        assert sub.reason == "reproduced: scores 0.0500 and 0.0300, the lower is kept"
    else:
        assert sub.reason.startswith("score: ") and sub.reason.endswith(f": {second.status.value} run")


def test_a_fault_is_retried_then_undecided(submitted):
    led, sid = submitted
    Pipeline(led, Scripted(scan=InfrastructureError("UNAVAILABLE: down")), through=State.SCANNED, max_attempts=2,
             backoff_s=0).run()
    assert led.get(sid).state is State.NO_DECISION and "UNAVAILABLE: down" in led.get(sid).reason
    assert [a.outcome for a in led.attempts(sid)] == ["retry", "retry"]


def test_a_refusal_stops_the_run_with_nothing_judged(submitted):
    led, sid = submitted
    with pytest.raises(InfrastructureError, match="scan: the service refused the validator: bad token"):
        Pipeline(led, Scripted(scan=StageRefused("bad token")), through=State.SCANNED, backoff_s=0).run()
    assert led.get(sid).state is State.RECEIVED
    assert [(a.outcome, a.reason) for a in led.attempts(sid)] == [("refused", "bad token")]
