"""Admission wire <-> records: the request's build result is read back as the build's outcome; the admission outcome
becomes the verdict, with the device it ran on beside it."""

from __future__ import annotations

from hotfloat.compiler import BuildRecord, load_build
from hotfloat.validator import Admitted, Outcome

from .._proto import admission_pb2
from ..common.convert import artifacts_from_proto, verdict_from_proto, verdict_to_proto


def build_from_proto(msg) -> Outcome[BuildRecord]:
    """The compiler's outcome as it sent it (verdict, reasons, record, artifacts), its evidence parsed once and every
    artifact digest checked; admission refuses a build that did not pass."""
    status, reasons, evidence = verdict_from_proto(msg.verdict)
    artifacts = artifacts_from_proto(msg.artifacts)
    return Outcome(status, reasons, load_build(evidence, artifacts), artifacts)


def admit_result(outcome: Outcome[Admitted]) -> admission_pb2.AdmitResult:
    """Both reports (with the seed) are the evidence; the device travels in its own field."""
    verdict = verdict_to_proto(outcome.status, outcome.reasons, outcome.evidence, exclude={"device"})
    return admission_pb2.AdmitResult(verdict=verdict, device=outcome.evidence.device)
