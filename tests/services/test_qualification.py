"""The qualification runner over a Unix socket: one complete-engine A/B with streamed progress and full evidence."""

from __future__ import annotations

import json

from hotfloat.qualify import Evidence, recompute
from hotfloat_services._proto import common_pb2, qualification_pb2, qualification_pb2_grpc
from hotfloat_services.common.auth import call_metadata
from hotfloat_services.common.transport import channel

GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""


def test_qualify_streams_runs_and_returns_recomputable_evidence(services, token, packed, make_bundle):
    targets = services("qualification", qualify_warmup_passes=0)
    auth = call_metadata(token)
    archive, identity = packed(make_bundle(GOOD))
    bundle = common_pb2.BundleArchive(identity=identity, archive=archive)
    with channel(targets["qualification"]) as q:
        events = list(qualification_pb2_grpc.QualificationStub(q).Qualify(
            qualification_pb2.QualifyRequest(bundle=bundle), timeout=600, metadata=auth))
    assert events[0].HasField("progress") and events[-1].HasField("result")
    result = events[-1].result
    assert result.verdict.status in (common_pb2.PASS, common_pb2.FAIL, common_pb2.NO_DECISION)
    assert result.verdict.reasons, "a qualification verdict always says why"
    evidence = Evidence.model_validate(json.loads(result.verdict.evidence_json))
    assert evidence.bundle_identity == identity and evidence.frames
    decision = recompute(evidence)
    assert decision.status == {1: "PASS", 2: "FAIL", 3: "NO_DECISION"}[result.verdict.status]
    assert decision.score == result.score


def test_two_qualifications_on_one_host_are_timed_one_after_the_other(services, token, packed, make_bundle):
    import threading
    import time

    targets = services("qualification", qualify_warmup_passes=0)
    auth = call_metadata(token)
    runs: dict[str, list[tuple[float, str]]] = {"first": [], "second": []}

    def qualify(name: str, source: str) -> None:
        archive, identity = packed(make_bundle(source, name=name))
        with channel(targets["qualification"]) as q:
            for e in qualification_pb2_grpc.QualificationStub(q).Qualify(qualification_pb2.QualifyRequest(
                    bundle=common_pb2.BundleArchive(identity=identity, archive=archive)), timeout=600, metadata=auth):
                runs[name].append((time.monotonic(), e.progress.message if e.HasField("progress") else "result"))

    threads = [threading.Thread(target=qualify, args=(n, GOOD + f"# {n}\n")) for n in runs]
    for t in threads:
        t.start()
        time.sleep(0.5)  # the first holds the host before the second asks
    for t in threads:
        t.join(600)
    assert all(r and r[-1][1] == "result" for r in runs.values())
    assert any("waiting for the host" in m for _, m in runs["second"])
    first_done = runs["first"][-1][0]
    timed = [t for t, m in runs["second"] if m.startswith(("booting", "round"))]
    assert timed and min(timed) >= first_done - 1.5, "the second qualification was timed while the first still ran"


def test_a_configured_rule_sets_only_what_it_names_over_the_devices_defaults():
    """The demo names four parameters; the CPU's switched-off carry-over bound, its floors and the audit's per-slot
    slack stay (a rule that reset them to the generic defaults put a 1% carry-over bound on a shared CPU box, which
    charged an honest candidate once in three CI runs). A calibrated rule read from a record keeps every timing
    field; the correctness slacks are never a record's (the committed record says audit_slack 0, from before the
    audit: taken as given it would switch the audit's accuracy check off)."""
    from hotfloat.qualify import QualifyOptions, RuleConfig
    from hotfloat_services.qualification.servicer import QualificationServicer
    from hotfloat_services.serve import ServiceConfig

    named = RuleConfig(logprob_tol=1e-3, drift_bound=5.0, look_rounds=3, max_looks=2)
    rule = QualificationServicer(None, ServiceConfig(qualify_rule=named))._options.rule
    cpu = QualifyOptions.for_device("cpu").rule
    assert (rule.look_rounds, rule.max_looks, rule.drift_bound, rule.logprob_tol) == (3, 2, 5.0, 1e-3)
    assert (rule.carry_bound, rule.noise_floor, rule.audit_slack) == (cpu.carry_bound, cpu.noise_floor, cpu.audit_slack)
    full = RuleConfig.model_validate_json(RuleConfig(look_rounds=7, carry_bound=0.02, logprob_tol=0.1).model_dump_json())
    got = QualificationServicer(None, ServiceConfig(qualify_rule=full))._options.rule
    assert got == full.model_copy(update={"gate_slack": cpu.gate_slack, "audit_slack": cpu.audit_slack})
    from hotfloat.qualify.api import CUDA_RECORD
    from hotfloat.qualify.calibrate import load_rule

    record = load_rule(CUDA_RECORD)
    assert "audit_slack" in record.model_fields_set and record.audit_slack == 0
    got = QualificationServicer(None, ServiceConfig(qualify_rule=record))._options.rule
    assert (got.gate_slack, got.audit_slack) == (cpu.gate_slack, cpu.audit_slack) and got.look_rounds == record.look_rounds
