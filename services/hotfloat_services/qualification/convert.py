"""Qualification wire <-> records: the qualification outcome becomes a verdict with its full evidence (every raw
timing frame, so the decision can be recomputed from the reply alone), the score beside it, and the calibration the
verdict was judged under as a typed field (what a caller branches on)."""

from __future__ import annotations

from hotfloat.qualify.calibration import Calibrated, Uncalibrated
from hotfloat.validator import Outcome, Qualified

from .._proto import qualification_pb2
from ..common.convert import verdict_to_proto


def qualify_result(outcome: Outcome[Qualified]) -> qualification_pb2.QualifyResult:
    verdict = verdict_to_proto(outcome.status, outcome.reasons, outcome.evidence, exclude={"score", "endpoint"})
    return qualification_pb2.QualifyResult(
        verdict=verdict, score=outcome.evidence.score, calibration=calibration_to_proto(outcome.evidence.calibration)
    )


def calibration_to_proto(c: Calibrated | Uncalibrated | None) -> qualification_pb2.Calibration | None:
    if c is None:
        return None
    if isinstance(c, Uncalibrated):
        return qualification_pb2.Calibration(why_none=c.why)
    return qualification_pb2.Calibration(
        record=c.record,
        sha256=c.sha256,
        device=c.device,
        independent_units=c.units,
        false_passes=c.false_passes,
        false_pass_upper_95=c.false_pass_upper_95,
        positive_controls=c.controls,
        positive_control_passes=c.control_passes,
        injected=c.injected,
        injected_passes=c.injected_passes,
        meets_targets=c.meets_targets,
        shortfall=c.shortfall,
    )
