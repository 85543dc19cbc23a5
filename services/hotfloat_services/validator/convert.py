"""Validator wire <-> records: requests built from ledger data, replies turned into stage outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from hashlib import sha256

from hotfloat.errors import InfrastructureError
from hotfloat.verdict import Status

from .._proto import admission_pb2, common_pb2, compiler_pb2, qualification_pb2
from ..common.convert import artifact_to_proto, artifacts_from_proto, bundle_to_proto, verdict_from_proto, verdict_to_proto


@dataclass(frozen=True)
class Outcome:
    """What a stage decided: its status and reasons, the evidence to record, and any artifact bytes to keep."""

    status: Status
    reasons: list[str]
    evidence: dict
    artifacts: dict[str, bytes] = field(default_factory=dict)

    def ledger_evidence(self) -> dict:
        """The evidence row: verdict, the service's record, and artifact digests (their bytes go to blobs)."""
        return {"status": self.status.value, "reasons": self.reasons, "record": self.evidence,
                "artifacts": {n: sha256(d).hexdigest() for n, d in sorted(self.artifacts.items())}}


def outcome(verdict: common_pb2.Verdict, artifacts=(), extra: dict | None = None) -> Outcome:
    try:
        status, reasons, evidence = verdict_from_proto(verdict)
        arts = artifacts_from_proto(artifacts)
    except Exception as e:  # a malformed reply is the service's fault, never the candidate's
        raise InfrastructureError(f"malformed reply: {e}") from None
    return Outcome(status, reasons, {**evidence, **(extra or {})}, arts)


def scan_request(archive: bytes, identity: str) -> compiler_pb2.ScanRequest:
    return compiler_pb2.ScanRequest(bundle=bundle_to_proto(archive, identity))


def build_request(archive: bytes, identity: str) -> compiler_pb2.BuildRequest:
    return compiler_pb2.BuildRequest(bundle=bundle_to_proto(archive, identity))


def build_result(built: dict, blobs: dict[str, bytes]) -> compiler_pb2.BuildResult:
    """Rebuilds the compiler's result from the ledger's BUILT evidence and stored artifacts for the next stages."""
    verdict = verdict_to_proto(Status(built["status"]), built["reasons"], built["record"])
    return compiler_pb2.BuildResult(verdict=verdict, artifacts=[artifact_to_proto(n, d) for n, d in sorted(blobs.items())])


def admit_request(archive: bytes, identity: str, build: compiler_pb2.BuildResult) -> admission_pb2.AdmitRequest:
    return admission_pb2.AdmitRequest(bundle=bundle_to_proto(archive, identity), build=build)


def qualify_request(archive: bytes, identity: str, build: compiler_pb2.BuildResult) -> qualification_pb2.QualifyRequest:
    return qualification_pb2.QualifyRequest(bundle=bundle_to_proto(archive, identity), build=build)

