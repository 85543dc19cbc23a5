"""Evidence: the record of one qualification (frames, rule, decision and everything they ran on), written once,
read back as untrusted input, and recomputed from alone."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, model_validator

from ..bundle.bounded import load_record
from ..env import EnvIdentity
from ..errors import InputError
from ..record import Record
from ..verdict import Status
from .audit_v3 import RecordV3
from .calibration import Calibration, CalibrationFile, check
from .decision import judge
from .isolation.memory import MemoryRecord
from .audit_records import AuditRecord
from .records import Decision, EngineSpec, IsolationRecord, RuleConfig, RunFrame, Workload


def _serving_order(order: list[int]) -> list[int]:
    if sorted(order) != [0, 1, 2]:
        raise ValueError("each round's order must be the frame indices 0, 1, 2, each once")
    return order


class Evidence(Record):
    """Everything needed to recompute a decision: identities, workload, parameters, raw frames and the verdict."""

    format: Literal[
        "hotfloat-qualify-evidence-v2",
        "hotfloat-qualify-evidence-v3",
        "hotfloat-qualify-evidence-v4",
        "hotfloat-qualify-evidence-v5",
        "hotfloat-qualify-evidence-v6",
    ] = "hotfloat-qualify-evidence-v6"
    """v6 added the audit's recheck (every kept call of the bundle's says whether it rewrote its inputs; earlier
    evidence says no, unchecked); v5 the calibration the verdict was judged under; v4 keeps the audit per round and
    stratum (hotfloat.qualify.audit); v3 added the rule's version, isolation and audit records (judged as v3 did,
    hotfloat.qualify.audit_v3); v2 evidence (rule version 1) still recomputes."""
    bundle_identity: str
    baseline_identity: str | None = None
    """The incumbent bundle armed in B runs, or None for the stock engine."""
    engine: EngineSpec
    engine_identity: str
    """SHA-256 of the engine's model config, software versions and settings, reported by the engine process (B, C and
    B' must all report the same)."""
    engine_info: dict[str, str] = {}
    """What the baseline engine reported about itself: library versions (sglang, sgl-kernel, flashinfer, torch,
    CUDA) and serving settings (attention backend, graphs); the identity hashes the same."""
    workload: Workload
    order: list[Annotated[list[int], AfterValidator(_serving_order)]] = []
    """[round] the frame indices in the order their passes were served, drawn from the workload seed; the
    carry-over check reads which engine each pass followed."""
    rule: RuleConfig
    env: EnvIdentity | None = None
    """hotfloat.env.collect() of the validator host (GPU, driver, CUDA, torch, triton versions)."""
    sandboxed: bool
    """Whether the engine processes ran inside the candidate sandbox; False only by the validator's explicit opt-out."""
    frames: list[RunFrame]
    twin: RunFrame | None = None
    """The gate's twin (role T, index 3): the first rounds' prompts served, untimed, before timing began; None in
    evidence formed without one (the gate then holds the candidate to the floor tolerance)."""
    isolation: IsolationRecord | None = None
    """How engines were kept apart on the device (evidence v3)."""
    audit: list[AuditRecord] | list[RecordV3] | None = None
    """The in-engine audit of B, C and B' (hotfloat.qualify.audit; evidence v3's own records there); None where none
    ran."""
    memory: MemoryRecord | None = None
    """The device's memory plan and what each engine held (hotfloat.qualify.isolation.memory); None where no driver
    reports per-process memory (the CPU engines)."""
    decision: Decision
    calibration: Calibration | None = None
    """The calibration record the verdict was judged under, with its digest and what it measured, or none and why
    (hotfloat.qualify.calibration); every v5 and v6 evidence says which, earlier evidence did not."""
    started: str
    """UTC ISO time the qualification started."""
    seconds: float

    @model_validator(mode="after")
    def _audit_of_its_format(self):
        v3 = bool(self.audit) and isinstance(self.audit[0], RecordV3)
        if self.audit and v3 != (self.format == "hotfloat-qualify-evidence-v3"):
            raise ValueError(f"audit records of another format than {self.format}")
        return self

    @model_validator(mode="before")
    @classmethod
    def _v2_rule(cls, data):
        """Evidence written before the rule had versions was decided by version 1."""
        if (
            isinstance(data, dict)
            and data.get("format") == "hotfloat-qualify-evidence-v2"
            and isinstance(data.get("rule"), dict)
        ):
            data = {**data, "rule": {"version": 1, **data["rule"]}}
        return data

    @model_validator(mode="after")
    def _names_its_calibration(self):
        named = self.format in ("hotfloat-qualify-evidence-v5", "hotfloat-qualify-evidence-v6")
        if (self.calibration is None) == named:
            raise ValueError("evidence v5 and later, and only they, name the calibration its verdict was judged under")
        return self

    @model_validator(mode="after")
    def _rechecked_only_from_v6(self):
        if self.format != "hotfloat-qualify-evidence-v6" and any(
            c.inputs_changed for a in self.audit or () if isinstance(a, AuditRecord) for c in a.calls
        ):
            raise ValueError(f"{self.format} evidence was not rechecked: no call of it can have rewritten its inputs")
        return self


class QualifyResult(Record):
    """What a caller (the CLI, the Qualification service) gets back: the verdict and its evidence."""

    status: Status
    score: float
    reason: str
    evidence: Evidence


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


def check_calibration(evidence: Evidence, given: Iterable[CalibrationFile] = ()) -> bool | None:
    """Holds the evidence's calibration to the record it names, among the packaged records and `given`: True when
    checked, False when no record at hand has its digest, None when the evidence names none (before v5); an
    InputError when the evidence's summary is not what that record says for its rule and engine."""
    if evidence.calibration is None:
        return None
    from .options import packaged, recorded_gpus

    files = [*given, *(packaged(gpu, a) for gpu, made in recorded_gpus().items() for a in made)]
    return check(evidence.calibration, evidence.rule, evidence.engine_info, evidence.engine.device, files)
