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
        events = list(
            qualification_pb2_grpc.QualificationStub(q).Qualify(
                qualification_pb2.QualifyRequest(bundle=bundle), timeout=600, metadata=auth
            )
        )
    assert events[0].HasField("progress") and events[-1].HasField("result")
    result = events[-1].result
    assert result.verdict.status in (common_pb2.PASS, common_pb2.FAIL, common_pb2.NO_DECISION)
    assert result.verdict.reasons, "a qualification verdict always says why"
    evidence = Evidence.model_validate(json.loads(result.verdict.evidence_json))
    assert evidence.bundle_identity == identity and evidence.frames
    decision = recompute(evidence)
    assert decision.status == {1: "PASS", 2: "FAIL", 3: "NO_DECISION"}[result.verdict.status]
    assert decision.score == result.score
    # the CPU rule names no calibration record, in the evidence and in the reply's typed field alike
    assert result.HasField("calibration") and result.calibration.record == ""
    assert result.calibration.why_none == evidence.calibration.why == "the CPU rule, never calibrated"


def test_two_qualifications_on_one_host_are_timed_one_after_the_other(services, token, packed, make_bundle):
    import threading
    import time

    targets = services("qualification", qualify_warmup_passes=0)
    auth = call_metadata(token)
    runs: dict[str, list[tuple[float, str]]] = {"first": [], "second": []}

    def qualify(name: str, source: str) -> None:
        archive, identity = packed(make_bundle(source, name=name))
        with channel(targets["qualification"]) as q:
            for e in qualification_pb2_grpc.QualificationStub(q).Qualify(
                qualification_pb2.QualifyRequest(bundle=common_pb2.BundleArchive(identity=identity, archive=archive)),
                timeout=600,
                metadata=auth,
            ):
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
