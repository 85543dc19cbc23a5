"""The pipeline as a library: driven through `Stages` by a plain object over a real ledger, no grpc anywhere."""

from __future__ import annotations

import threading
import time

import pytest

from hashlib import sha256

from hotfloat.bundle import load_bundle, pack
from hotfloat.compiler import BuildRecord, KernelArtifact
from hotfloat.errors import InfrastructureError
from hotfloat.ledger import Ledger, State
from hotfloat.scan import ScanReport
from hotfloat.validator import Admitted, Outcome, Pipeline, ScoreEvidence, StageRefused
from hotfloat.validator.runs import latest, reproductions
from hotfloat.validator.settle import SettlementPolicy
from hotfloat.validator.standings import crowns, scores
from hotfloat.verdict import Status
from hotfloat.verify import VerifyReport

from ..conftest import calibrated

CUBIN = b"\x7fELF pretend cubin"
KERNEL = KernelArtifact(
    op="activation:silu_and_mul",
    kind="triton",
    entry="k",
    symbol="k",
    dtype="bf16",
    arch="sm_90",
    cubin="k.cubin",
    cubin_sha256=sha256(CUBIN).hexdigest(),
    param_names=[],
    param_types=[],
    layout=[],
    grid=["1"],
    block=128,
    inputs={},
)
BUILT = BuildRecord(bundle_identity="0" * 64, arch="sm_90", toolchain={}, status=Status.PASS, kernels=[KERNEL])
VERIFIED = VerifyReport(bundle_id="a", identity="0" * 64, seed=1, device="cpu", arch="cpu", sandboxed=True, rows=[])


class Scripted:
    """Answers each stage from a script; admission checks it got the build back from the ledger."""

    def __init__(self, *qualifications: Outcome, scan: Exception | None = None):
        self.qualifications, self.scan_fault, self.seen, self.avoided = list(qualifications), scan, [], []

    def scan(self, archive, identity, on_progress):
        if self.scan_fault is not None:
            raise self.scan_fault
        return Outcome(Status.PASS, [], ScanReport(identity=identity, bundle_id="a", ops=[]))

    def build(self, archive, identity, on_progress):
        return Outcome(Status.PASS, ["built"], BUILT, {"k.cubin": CUBIN})

    def admit(self, archive, identity, built, on_progress, *, on_start):
        on_start("")
        self.seen.append(built)
        return Outcome(Status.PASS, [], Admitted(verify=VERIFIED, device="cpu"))

    def qualify(self, archive, identity, on_progress, *, on_start, avoid=None):
        on_start("")
        self.avoided.append(avoid)
        return self.qualifications.pop(0)


@pytest.fixture
def submitted(make_bundle, tmp_path):
    led = Ledger(tmp_path / "l.db")
    sub, _ = led.receive(pack(load_bundle(make_bundle(name="a"))))
    yield led, sub.id
    led.close()


@pytest.mark.parametrize(
    ("second", "ends"),
    [
        (("PASS", 0.03, "PASS"), State.SCORED),
        (("FAIL", 0.0, "FAIL"), State.FAILED),
        (("FAIL", 0.0, "PASS"), State.NO_DECISION),
        (("NO_DECISION", 0.0, "N/A"), State.NO_DECISION),
    ],
)
def test_the_score_stage_settles_by_the_one_rule(submitted, qualified_record, second, ends):
    def run(status: str, score: float, gate: str) -> Outcome:
        return Outcome(Status(status), [f"{status} run"], qualified_record(status, score, gate))

    led, sid = submitted
    second = run(*second)
    stages = Scripted(run("PASS", 0.05, "PASS"), second)
    Pipeline(led, stages, through=State.SCORED, workers=1, backoff_s=0).run()
    sub = led.get(sid)
    assert sub.state is ends, sub.reason
    assert (
        all(b.status is Status.PASS and b.artifacts == {"k.cubin": CUBIN} and b.evidence == BUILT for b in stages.seen)
        and len(stages.seen) == 1
    )
    assert scores(led).get(sid, (None, None))[1] == (0.03 if ends is State.SCORED else None)
    if ends is State.SCORED:  # CPU runs name no calibration record: the PASS is provisional, and held from the crown
        assert sub.reason.startswith("reproduced: scores 0.0500 and 0.0300, the lower is kept; PROVISIONAL: ")
        assert scores(led)[sid].provisional and crowns(led)["activation.silu_and_mul"].winner is None
    else:
        assert sub.reason.startswith("score: ") and sub.reason.endswith(f": {second.status.value} run")


def test_the_reproduction_is_asked_to_avoid_the_endpoint_of_the_first_run(submitted, qualified_record):
    """The endpoint recorded with the first run (QUALIFIED, in the ledger: it survives a restart) goes to the second."""
    led, sid = submitted
    first = qualified_record("PASS", 0.05, "PASS").model_copy(update={"endpoint": "gpu-3:50051"})
    stages = Scripted(Outcome(Status.PASS, [], first), Outcome(Status.PASS, [], qualified_record("PASS", 0.04, "PASS")))
    Pipeline(led, stages, through=State.SCORED, workers=1, backoff_s=0).run()
    assert led.get(sid).state is State.SCORED and stages.avoided == [None, "gpu-3:50051"]


def test_under_the_h200_record_a_third_run_is_banked_resumed_and_settles_full(submitted, qualified_record):
    """Each run names the committed H200 record (13.3%): two PASSes bound a null kernel by 1.77%, over the 1%
    target, so the second is banked with its evidence and the stage runs again, on another endpoint than the
    second's. A validator stopped there resumes at the third run (the second is not redone) and three PASSes settle
    full, crowned, each run named in the ledger."""
    h200 = calibrated(21, record="calibration-h200.json")  # the committed H200 record's counts: 13.3%

    def run(score: float, endpoint: str) -> Outcome:
        record = qualified_record("PASS", score, "PASS", calibration=h200).model_copy(update={"endpoint": endpoint})
        return Outcome(Status.PASS, ["PASS run"], record)

    led, sid = submitted
    stop = threading.Event()
    events = []

    def on_event(sid, stage, message):
        events.append(message)
        if "reproduced again" in message:
            stop.set()

    first = Scripted(run(0.05, "gpu-0"), run(0.04, "gpu-1"))
    Pipeline(led, first, through=State.SCORED, workers=1, backoff_s=0, on_event=on_event).run(stop=stop)
    assert led.get(sid).state is State.QUALIFIED
    assert any("PASS 2 of at most 3: combined false-PASS bound 1.77%" in e for e in events)
    [banked] = reproductions(led, sid)
    assert banked.calibration == h200 and banked.endpoint == "gpu-1" and latest(led)[sid] == banked
    then = Scripted(run(0.045, "gpu-0"))
    Pipeline(led, then, through=State.SCORED, workers=1, backoff_s=0).run()
    assert led.get(sid).state is State.SCORED and then.avoided == ["gpu-1"]
    kept = scores(led)[sid]
    assert kept.score == 0.04 and not kept.provisional and kept.calibration == "calibration-h200.json x3"
    assert kept.bound == h200.bound**3 and crowns(led)["activation.silu_and_mul"].winner == led.get(sid).identity
    final = led.evidence(sid, State.SCORED, ScoreEvidence)
    assert [r.endpoint for r in final.runs] == ["gpu-0", "gpu-1", "gpu-0"] and final.settled.bound == kept.bound
    assert [(a.stage, a.outcome) for a in led.attempts(sid) if a.stage == "score"] == [("score", "done")] * 2


@pytest.mark.parametrize("policy, crowned", [("held", False), ("crowned", True)])
def test_a_provisional_pass_is_scored_and_crowned_only_where_the_policy_says(
    submitted, qualified_record, policy, crowned
):
    """The H100 record (77.6%) cannot reach the target within three runs: settled provisional after two, scored
    either way; `held` leaves the crown empty, `crowned` crowns it and names it provisional."""
    h100 = calibrated(2, record="calibration-h100-triton.json")  # the H100 record the first win ran under: 77.6%
    runs = [Outcome(Status.PASS, [], qualified_record("PASS", s, "PASS", calibration=h100)) for s in (0.0175, 0.0128)]
    led, sid = submitted
    settlement = SettlementPolicy(provisional=policy)
    Pipeline(led, Scripted(*runs), through=State.SCORED, workers=1, backoff_s=0, settlement=settlement).run()
    kept, crown = scores(led)[sid], crowns(led)["activation.silu_and_mul"]
    assert led.get(sid).state is State.SCORED and kept.provisional and kept.score == 0.0128
    identity = led.get(sid).identity
    if crowned:
        assert crown.winner == identity and crown.provisional == [identity]
    else:
        assert crown.winner is None and crown.provisional == []


def test_a_fault_is_retried_then_undecided(submitted):
    led, sid = submitted
    Pipeline(
        led, Scripted(scan=InfrastructureError("UNAVAILABLE: down")), through=State.SCANNED, max_attempts=2, backoff_s=0
    ).run()
    assert led.get(sid).state is State.NO_DECISION and "UNAVAILABLE: down" in led.get(sid).reason
    assert [a.outcome for a in led.attempts(sid)] == ["retry", "retry"]


def test_one_pipeline_runs_again_with_the_callers_stop_left_as_it_was(submitted, make_bundle):
    """A run that drains (or ends in a fault) does not set the caller's `stop`: the same pipeline and event serve
    the next run, which works the new submission through."""
    led, sid = submitted
    stop, pipeline = threading.Event(), Pipeline(led, Scripted(), through=State.ADMITTED, workers=1, backoff_s=0)
    pipeline.run(stop=stop)
    later, _ = led.receive(pack(load_bundle(make_bundle(name="b"))))
    pipeline.run(stop=stop)
    assert not stop.is_set() and led.get(sid).state is led.get(later.id).state is State.ADMITTED


def test_a_refusal_stops_the_run_with_nothing_judged(submitted):
    led, sid = submitted
    with pytest.raises(InfrastructureError, match="scan: the service refused the validator: bad token"):
        Pipeline(led, Scripted(scan=StageRefused("bad token")), through=State.SCANNED, backoff_s=0).run()
    assert led.get(sid).state is State.RECEIVED
    assert [(a.outcome, a.reason) for a in led.attempts(sid)] == [("refused", "bad token")]


class Stopping(Scripted):
    """Two qualification endpoints' worth of calls: the first runs until `release`; the second waits for an endpoint
    until the pipeline's `on_stop` gives up its wait, and an endpoint then frees (it would start a call)."""

    def __init__(self, outcome: Outcome):
        super().__init__(outcome)
        self.release, self.abandoned, self.calls, self.refused = threading.Event(), threading.Event(), [], []

    def qualify(self, archive, identity, on_progress, *, on_start, avoid=None):
        self.calls.append(identity)
        if len(self.calls) > 1:
            self.abandoned.wait(30)
            try:
                on_start("q1")
            except InfrastructureError as e:
                self.refused.append(str(e))
                raise
        on_start("q0")
        self.release.wait(30)
        return super().qualify(archive, identity, on_progress, on_start=on_start, avoid=avoid)


def test_a_stop_starts_nothing_new_records_the_call_in_flight_and_nothing_for_a_wait(
    make_bundle, tmp_path, qualified_record
):
    led = Ledger(tmp_path / "l.db")
    for name in "ab":
        led.receive(pack(load_bundle(make_bundle(name=name))))
    stages, stop = Stopping(Outcome(Status.PASS, [], qualified_record("PASS", 0.05, "PASS"))), threading.Event()
    pipeline = Pipeline(led, stages, through=State.SCORED, workers=2, backoff_s=0, on_stop=stages.abandoned.set)
    runner = threading.Thread(target=pipeline.run, kwargs={"drain": False, "poll_s": 0.05, "stop": stop})
    runner.start()
    deadline = time.monotonic() + 60
    while len(stages.calls) < 2:
        assert time.monotonic() < deadline and runner.is_alive()
        time.sleep(0.02)
    stop.set()
    assert stages.abandoned.wait(5)  # the run gave up the waiting call's wait, with the first still in flight
    stages.release.set()
    runner.join(10)
    assert not runner.is_alive()
    ran, waited = stages.calls
    assert {s.identity: s.state for s in led.submissions()} == {ran: State.QUALIFIED, waited: State.ADMITTED}
    assert stages.refused == ["the validator is stopping: the call was not made"]  # and no reproduction started
    tries = {
        s.identity: [(a.stage, a.outcome) for a in led.attempts(s.id) if a.stage in ("qualify", "score")]
        for s in led.submissions()
    }
    assert tries == {ran: [("qualify", "done")], waited: []}
    led.close()
