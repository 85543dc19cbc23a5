"""Qualification wire <-> records: the qualify result becomes a verdict with its score and full evidence."""

from __future__ import annotations

from hotfloat.qualify import QualifyResult
from hotfloat.verdict import Status

from .._proto import qualification_pb2
from ..common.convert import verdict_to_proto


def qualify_result(result: QualifyResult) -> qualification_pb2.QualifyResult:
    """The evidence carries every raw timing frame, so the decision can be recomputed from the reply alone."""
    verdict = verdict_to_proto(Status(result.status), [result.reason] if result.reason else [], result.evidence)
    return qualification_pb2.QualifyResult(verdict=verdict, score=result.score)
