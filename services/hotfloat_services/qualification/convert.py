"""Qualification wire <-> records: the qualify result becomes a verdict with its score and full evidence."""

from __future__ import annotations

from hotfloat.qualify import QualifyResult
from hotfloat.verdict import Status

from .._proto import qualification_pb2
from ..common.convert import verdict_to_proto


def qualify_result(result: QualifyResult, injected: dict[str, int]) -> qualification_pb2.QualifyResult:
    """The evidence carries every raw timing frame, so the decision can be recomputed from the reply alone; a
    calibration knob in force is named in the reasons, so no injected speed difference passes for a real one."""
    reasons = [result.reason] if result.reason else []
    if injected:
        reasons.append(f"calibration: extra stock passes per role {dict(sorted(injected.items()))} were injected")
    verdict = verdict_to_proto(Status(result.status), reasons, result.evidence)
    return qualification_pb2.QualifyResult(verdict=verdict, score=result.score)
