"""Evidence files: written once per qualification, read back as untrusted input, and recomputed from alone."""

from __future__ import annotations

import os
from pathlib import Path

from ..bundle.bounded import load_record
from ..errors import InputError
from .decision import judge
from .records import Decision, Evidence

MAX_EVIDENCE_BYTES = 32 << 20
"""Evidence travels in one gRPC reply (32 MiB at most); the bound also keeps parsing a file well under 1 GiB."""


def save(evidence: Evidence, path: str | os.PathLike) -> None:
    try:
        Path(path).write_text(evidence.model_dump_json())
    except OSError as e:
        raise InputError(f"cannot write evidence to {path}: {e.strerror or e}") from None


def load(path: str | os.PathLike) -> Evidence:
    """Parses an evidence file as untrusted input; anything malformed is an InputError naming the first problem."""
    return load_record(path, Evidence, max_bytes=MAX_EVIDENCE_BYTES, what="valid qualification evidence")


def recompute(evidence: Evidence) -> Decision:
    """The decision the evidence's frames and rule support, computed exactly as the live run did."""
    try:
        decision = judge(evidence.frames, evidence.rule, evidence.order, evidence.twin, evidence.audit)
    except ValueError as e:
        raise InputError(f"evidence frames are inconsistent: {e}") from None
    if decision is None:
        raise InputError("the evidence ends before the protocol reached a decision (incomplete frames)")
    return decision
