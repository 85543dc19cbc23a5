"""Wire <-> record conversions every service shares: archives become validated bundles, verdicts become messages."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel

from hotfloat.bundle import Bundle
from hotfloat.bundle.bounded import load_json
from hotfloat.errors import InputError
from hotfloat.validator.local import bundle_of
from hotfloat.verdict import Status

from .._proto import common_pb2

_STATUS = {
    Status.PASS: common_pb2.PASS,
    Status.FAIL: common_pb2.FAIL,
    Status.NO_DECISION: common_pb2.NO_DECISION,
    Status.N_A: common_pb2.NOT_APPLICABLE,
}
_FROM_WIRE = {v: k for k, v in _STATUS.items()}
MAX_EVIDENCE_CHARS = 32 << 20
"""A verdict's evidence JSON: at most the message limit."""
MAX_REASONS = 4096


def bundle_from_proto(msg: common_pb2.BundleArchive) -> Bundle:
    """Unpacks with the library's bounds and refuses an archive whose content is not the identity claimed."""
    return bundle_of(msg.archive, msg.identity)


def bundle_to_proto(archive: bytes, identity: str) -> common_pb2.BundleArchive:
    return common_pb2.BundleArchive(identity=identity, archive=archive)


def verdict_to_proto(
    status: Status, reasons: list[str], evidence: BaseModel, exclude: set[str] | None = None
) -> common_pb2.Verdict:
    """`exclude`: the record's fields that travel in their own reply fields, not in the evidence."""
    return common_pb2.Verdict(
        status=_STATUS[status], reasons=reasons, evidence_json=evidence.model_dump_json(exclude=exclude)
    )


def verdict_from_proto(msg: common_pb2.Verdict) -> tuple[Status, list[str], dict]:
    """A reply's verdict as (status, reasons, evidence); an unset or unknown status is the server's fault."""
    if msg.status not in _FROM_WIRE:
        raise InputError(f"reply carries no verdict status ({msg.status})")
    if len(msg.reasons) > MAX_REASONS:
        raise InputError(f"verdict carries {len(msg.reasons)} reasons, over the {MAX_REASONS} limit")
    try:
        evidence = load_json(msg.evidence_json or "{}", max_chars=MAX_EVIDENCE_CHARS, allow_nan=True)
    except ValueError as e:
        raise InputError(f"verdict evidence: {e}") from None
    if not isinstance(evidence, dict):
        raise InputError("verdict evidence must be a JSON object")
    return _FROM_WIRE[msg.status], list(msg.reasons), evidence


def artifact_to_proto(name: str, data: bytes) -> common_pb2.Artifact:
    return common_pb2.Artifact(name=name, data=data, sha256=hashlib.sha256(data).hexdigest())


def artifacts_from_proto(msgs) -> dict[str, bytes]:
    """Artifacts by name, each checked against its digest; a mismatch or duplicate refuses the whole request."""
    out: dict[str, bytes] = {}
    for a in msgs:
        if hashlib.sha256(a.data).hexdigest() != a.sha256:
            raise InputError(f"artifact {a.name!r}: content does not match its sha256")
        if a.name in out:
            raise InputError(f"artifact {a.name!r} appears twice")
        out[a.name] = a.data
    return out
