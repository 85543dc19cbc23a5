"""Admission wire <-> records: the request's build result is re-checked; the verify report becomes the verdict."""

from __future__ import annotations

from pydantic import ValidationError

from hotfloat.compiler import BuildRecord, load_build
from hotfloat.errors import InputError
from hotfloat.verdict import Status, combine
from hotfloat.verify import VerifyOptions

from .._proto import admission_pb2
from ..common.convert import artifacts_from_proto, verdict_from_proto, verdict_to_proto


def build_from_proto(msg) -> BuildRecord:
    """The compiler's record with its artifacts, every digest checked; a build that did not pass is refused."""
    artifacts = artifacts_from_proto(msg.artifacts)
    status, _, _ = verdict_from_proto(msg.verdict)
    record = load_build(msg.verdict.evidence_json, artifacts)
    if status is not record.status or status not in (Status.PASS, Status.N_A):
        raise InputError(f"admission needs a passed or not-needed build, got {record.status.value}")
    return record


def admit_result(admission, device: str) -> admission_pb2.AdmitResult:
    """Failing and undecided rows become the reasons; both reports (with the seed) are the evidence.

    The verdict is the combination of the checks that applied: any FAIL fails, then any NO_DECISION.
    """
    report, native = admission.verify, admission.native
    reasons = [f"{r.slot}:{r.variant} {r.dtype} {r.shape}: {r.reason}" for r in report.rows
               if r.status in (Status.FAIL, Status.NO_DECISION)]
    if report.status is Status.N_A:
        reasons = [f"no op of the bundle applies on {device}"]
    statuses = [report.status]
    if native is not None:
        statuses.append(native.status)
        if native.status is not Status.PASS:
            reasons += [f"cubins: {r}" for r in native.reasons]
    status = combine(statuses)
    if status is Status.PASS:
        reasons = []
    return admission_pb2.AdmitResult(verdict=verdict_to_proto(status, reasons, admission), device=device)


def verify_options(base: dict, seed: int | None) -> VerifyOptions:
    """The worker's configured options with the caller's replay seed, validated like any other input."""
    try:
        return VerifyOptions(**base, seed=seed)
    except ValidationError as e:
        raise InputError(f"admit request: {e.errors()[0]['msg']}") from None
