"""Qualification wire <-> records: the qualification outcome becomes a verdict with its full evidence (every raw
timing frame, so the decision can be recomputed from the reply alone) and the score beside it."""

from __future__ import annotations

from hotfloat.validator import Outcome, Qualified

from .._proto import qualification_pb2
from ..common.convert import verdict_to_proto


def qualify_result(outcome: Outcome[Qualified]) -> qualification_pb2.QualifyResult:
    verdict = verdict_to_proto(outcome.status, outcome.reasons, outcome.evidence, exclude={"score", "endpoint"})
    return qualification_pb2.QualifyResult(verdict=verdict, score=outcome.evidence.score)
