"""Validator wire <-> records: requests built from stage outcomes, replies turned into stage outcomes."""

from __future__ import annotations

from hotfloat.compiler import BuildRecord
from hotfloat.errors import InfrastructureError
from hotfloat.qualify.calibration import Calibrated, Uncalibrated
from hotfloat.validator import Outcome, Qualified
from hotfloat.validator.evidence import R

from .._proto import admission_pb2, common_pb2, compiler_pb2, qualification_pb2
from ..common.convert import artifacts_from_proto, bundle_to_proto, verdict_from_proto
from ..compiler.convert import build_result


def outcome(verdict: common_pb2.Verdict, kind: type[R], artifacts=(), extra: dict | None = None) -> Outcome[R]:
    """The reply as the stage's outcome, its evidence (with the reply's typed `extra` fields) read once as `kind`."""
    try:
        status, reasons, evidence = verdict_from_proto(verdict)
        record = kind.model_validate({**evidence, **(extra or {})})
        arts = artifacts_from_proto(artifacts)
    except Exception as e:  # a malformed reply is the service's fault, never the candidate's
        raise InfrastructureError(f"malformed reply: {str(e).splitlines()[0]}") from None
    return Outcome(status, reasons, record, arts)


def qualified(result: qualification_pb2.QualifyResult, endpoint: str) -> Outcome[Qualified]:
    """A qualification reply as the stage's outcome; its typed calibration must be the one its evidence names."""
    got = outcome(result.verdict, Qualified, extra={"score": result.score, "endpoint": endpoint})
    try:
        typed = calibration_from_proto(result.calibration) if result.HasField("calibration") else None
    except Exception as e:  # a malformed reply is the service's fault, never the candidate's
        raise InfrastructureError(f"malformed reply: calibration: {str(e).splitlines()[0]}") from None
    if typed != got.evidence.calibration:
        raise InfrastructureError("malformed reply: its calibration is not the one its evidence names")
    return got


def calibration_from_proto(msg: qualification_pb2.Calibration) -> Calibrated | Uncalibrated:
    if not msg.record:
        return Uncalibrated(why=msg.why_none)
    return Calibrated(
        record=msg.record,
        sha256=msg.sha256,
        device=msg.device,
        units=msg.independent_units,
        false_passes=msg.false_passes,
        false_pass_upper_95=msg.false_pass_upper_95,
        controls=msg.positive_controls,
        control_passes=msg.positive_control_passes,
        injected=msg.injected,
        injected_passes=msg.injected_passes,
        meets_targets=msg.meets_targets,
        shortfall=list(msg.shortfall),
    )


def scan_request(archive: bytes, identity: str) -> compiler_pb2.ScanRequest:
    return compiler_pb2.ScanRequest(bundle=bundle_to_proto(archive, identity))


def build_request(archive: bytes, identity: str) -> compiler_pb2.BuildRequest:
    return compiler_pb2.BuildRequest(bundle=bundle_to_proto(archive, identity))


def admit_request(archive: bytes, identity: str, built: Outcome[BuildRecord]) -> admission_pb2.AdmitRequest:
    """The build's outcome as recorded at BUILT, sent as the compiler sent it; admission re-checks it."""
    return admission_pb2.AdmitRequest(bundle=bundle_to_proto(archive, identity), build=build_result(built))


def qualify_request(archive: bytes, identity: str) -> qualification_pb2.QualifyRequest:
    return qualification_pb2.QualifyRequest(bundle=bundle_to_proto(archive, identity))
