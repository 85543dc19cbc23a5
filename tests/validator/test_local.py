"""The stages in this process: the whole pipeline over `LocalStages` and a real ledger, with no server and no socket,
and each stage's policy as the one library call every caller makes."""

from __future__ import annotations

import itertools

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.compiler import BuildRecord
from hotfloat.errors import InputError
from hotfloat.ledger import Ledger, State
from hotfloat.qualify import Evidence, QualifyResult
from hotfloat.validator import LocalStages, Outcome, Pipeline, StageConfig, StageEvidence, local
from hotfloat.scan import ScanReport
from hotfloat.admission.scope import QUICK_ADMISSION
from hotfloat.validator.evidence import EVIDENCE, Admitted, ScoreEvidence
from hotfloat.validator.standings import scores
from hotfloat.verdict import Status

from ..conftest import EXAMPLES

GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""
BANNED = "import socket\n\ndef run(x, out):\n    out.zero_()\n"
QUICK = StageConfig(**QUICK_ADMISSION.stage_kwargs())


@pytest.fixture
def stand_in(monkeypatch, qualified_record):
    """Qualification that passes at once with a fresh workload seed each run (the engines are qualify's to test)."""
    seeds, calls = itertools.count(11), []

    def qualify_bundle(bundle, options, progress):
        calls.append(options.device)
        progress("round", 1, 1)
        record = qualified_record("PASS", 0.04, "PASS", seed=next(seeds))
        evidence = Evidence(**record.model_dump(exclude={"score", "endpoint"}))
        return QualifyResult(status="PASS", score=0.04, reason="stand-in PASS", evidence=evidence)

    monkeypatch.setattr(local, "qualify_bundle", qualify_bundle)
    return calls


def test_the_pipeline_runs_in_this_process_through_scored(make_bundle, tmp_path, stand_in):
    """Scan refuses one bundle, the wrong kernel fails verification, the good one is admitted, qualified twice (the
    reproduction independent of the first run) and scored: the services' verdicts, with no service."""
    events = []
    with Ledger(tmp_path / "l.db", evidence=EVIDENCE) as led:
        ids = {
            name: led.receive(pack(load_bundle(make_bundle(kernel, name=name))), source=name)[0].id
            for name, kernel in (("good", GOOD), ("wrong", "def run(x, out):\n    out.zero_()\n"), ("banned", BANNED))
        }
        Pipeline(
            led, LocalStages(QUICK), through=State.SCORED, workers=1, backoff_s=0, on_event=lambda *e: events.append(e)
        ).run()
        subs = {name: led.get(sid) for name, sid in ids.items()}
        assert subs["good"].state is State.SCORED, subs["good"].reason
        assert scores(led)[ids["good"]][1] == 0.04 and stand_in == ["cpu", "cpu"]
        admitted = led.evidence(ids["good"], State.ADMITTED)  # the ledger reads each state's evidence as its record
        assert (
            isinstance(admitted, StageEvidence[Admitted])
            and admitted.status is Status.PASS
            and admitted.record.device == "cpu"
            and admitted.record.verify.rows
        )
        assert subs["wrong"].state is State.FAILED and subs["wrong"].reason.startswith("admit: activation.silu_and_mul")
        assert subs["banned"].state is State.FAILED and "socket" in subs["banned"].reason
        assert [t.to_state for t in led.transitions(ids["banned"])] == [State.RECEIVED, State.FAILED]
        refused = led.transitions(ids["banned"])[-1].evidence
        assert isinstance(refused, StageEvidence[ScanReport]) and not refused.record.clean and refused.reasons
        scored = led.transitions(ids["good"])[-1].evidence
        assert isinstance(scored, ScoreEvidence) and scored.settled.score == 0.04 and len(scored.runs) == 2
    assert any(stage == "score" and msg.startswith("PASS -> scored") for _, stage, msg in events)


def test_build_scans_first_and_admission_takes_only_a_passed_or_unneeded_build(make_bundle):
    bundle = load_bundle(make_bundle(BANNED))
    built = local.build_stage(bundle)
    assert built.status is Status.FAIL and built.reasons[0] == "scan refused the bundle" and built.artifacts == {}
    with pytest.raises(InputError, match="passed or not-needed build, got FAIL"):
        local.admit_stage(bundle, built, QUICK.verify_options())
    lying = Outcome(
        Status.PASS, [], BuildRecord(bundle_identity=bundle.identity, arch="none", toolchain={}, status=Status.N_A)
    )
    with pytest.raises(InputError, match="its record says N/A"):
        local.admit_stage(bundle, lying, QUICK.verify_options())


def test_one_mistake_on_every_row_is_one_admission_reason_not_a_reason_per_row():
    """silu_mutates_input fails every row for the one reason: the ledger keeps it once, with how many rows."""
    bundle = load_bundle(EXAMPLES / "silu_mutates_input")
    admitted = local.admit_stage(bundle, local.build_stage(bundle), StageConfig(device="cpu").verify_options(seed=5))
    rows = admitted.evidence.verify.rows
    assert admitted.status is Status.FAIL and len(rows) > 10 and all(r.status is Status.FAIL for r in rows)
    [reason] = admitted.reasons
    assert reason.endswith(f"and {len(rows) - 1} more rows: input mutated: x written; inputs must be read-only")
    assert len("; ".join(admitted.reasons)) < 200


def test_a_claimed_identity_must_be_the_archives():
    with pytest.raises(InputError, match="identity mismatch"):
        LocalStages().scan(pack(load_bundle(EXAMPLES / "silu_torch")), "0" * 64, lambda stage, msg: None)


def test_a_configured_rule_sets_only_what_it_names_over_the_devices_defaults():
    """The demo names four parameters; the CPU's switched-off carry-over bound, its floors and the audit's per-slot
    slack stay (a rule that reset them to the generic defaults put a 1% carry-over bound on a shared CPU box, which
    charged an honest candidate once in three CI runs). A calibrated rule read from a record keeps every timing
    field; the correctness slacks are never a record's (the committed record says audit_slack 0, from before the
    audit: taken as given it would switch the audit's accuracy check off)."""
    from hotfloat.qualify import QualifyOptions, RuleConfig
    from hotfloat.qualify.options import recorded_gpus
    from hotfloat.qualify.calibration import read_calibration

    named = RuleConfig(logprob_tol=1e-3, drift_bound=5.0, look_rounds=3, max_looks=2)
    rule = StageConfig(qualify_rule=named).qualify_options().rule
    cpu = QualifyOptions.for_device("cpu").rule
    assert (rule.look_rounds, rule.max_looks, rule.drift_bound, rule.logprob_tol) == (3, 2, 5.0, 1e-3)
    assert (rule.carry_bound, rule.noise_floor, rule.audit_slack) == (cpu.carry_bound, cpu.noise_floor, cpu.audit_slack)
    full = RuleConfig.model_validate_json(
        RuleConfig(look_rounds=7, carry_bound=0.02, logprob_tol=0.1).model_dump_json()
    )
    got = StageConfig(qualify_rule=full).qualify_options().rule
    assert got == full.model_copy(update={"gate_slack": cpu.gate_slack, "audit_slack": cpu.audit_slack})
    record = read_calibration(recorded_gpus()["NVIDIA H200"]["triton"]).rule
    assert "audit_slack" in record.model_fields_set and record.audit_slack == 0
    got = StageConfig(qualify_rule=record).qualify_options().rule
    assert (got.gate_slack, got.audit_slack) == (
        cpu.gate_slack,
        cpu.audit_slack,
    ) and got.look_rounds == record.look_rounds


def test_qualify_says_it_waits_only_while_another_qualification_holds_the_host():
    import threading

    class Stop(Exception):
        """Ends a call at its first progress note, before any engine boots."""

    archive = pack(load_bundle(EXAMPLES / "silu_torch"))
    identity = load_bundle(EXAMPLES / "silu_torch").identity
    stages, holding, release, first = LocalStages(), threading.Event(), threading.Event(), []

    def hold(stage, message):
        first.append(message)
        holding.set()
        release.wait(30)
        raise Stop

    def stop_at(seen):
        def note(stage, message):
            seen.append(message)
            raise Stop

        return note

    holder = threading.Thread(target=lambda: pytest.raises(Stop, stages.qualify, archive, identity, hold))
    holder.start()
    assert holding.wait(30)
    waiting: list[str] = []
    threading.Timer(0.5, release.set).start()
    with pytest.raises(Stop):
        stages.qualify(archive, identity, stop_at(waiting))
    holder.join(30)
    assert first == ["starting"], "the host was free: nothing to wait for"
    assert waiting[0].startswith("waiting for the host"), waiting
    free: list[str] = []
    with pytest.raises(Stop):
        stages.qualify(archive, identity, stop_at(free))
    assert free == ["starting"], "a host released by a run that raised is free again"
