"""The verify boundary records: what a caller asks for and the report it gets back."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, computed_field, model_validator

from ..env import EnvIdentity
from ..record import Record
from ..sandbox import SandboxPolicy
from ..verdict import Status, combine


class VerifyOptions(Record):
    """How to verify: where, with which secret, how hard, and under which bounds."""

    device: Literal["cpu", "cuda"] = "cpu"
    """cpu runs Triton through TRITON_INTERPRET=1 and torch natively; cuda adds CUDA-graph capture and replays."""
    seed: Annotated[int, Field(ge=0, lt=1 << 63)] | None = None
    """Secret that draws inputs, jittered token counts and call order; None draws a fresh one (reported for replay)."""
    trials: Annotated[int, Field(ge=1, le=20)] = 3
    """Calls per shape, each with fresh inputs, a jittered token count and re-poisoned outputs."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    """Wall-clock budget per op after the child's interpreter has started; a hung kernel is killed at it."""
    startup_timeout_s: Annotated[float, Field(gt=0, le=600)] = 120.0
    """Budget for the child's interpreter and torch import, before any candidate code runs."""
    sandboxed: bool = True
    """False runs candidates without namespaces (local development only; loudly logged)."""
    dtypes: list[str] | None = None
    """Only verify these dtypes."""
    max_shapes: Annotated[int, Field(ge=1)] | None = None
    """Only the first N verification shapes per dtype (quick local loops and tests); the drawn shapes always run."""
    cpu_max_elements: Annotated[int, Field(ge=1024)] | None = 1 << 18
    """On cpu, large shapes have their count dim scaled so no tensor exceeds this (None runs them whole)."""
    settle_s: Annotated[float, Field(ge=0, le=5)] = 0.02
    """Typical delay between a burst's last return and the second fingerprint that exposes deferred writes; each
    burst draws its own (none a quarter of the time, else 0.5x-1.5x this) and gaps between its calls (mostly none)."""
    scan: bool = True
    """Apply scan's policy before running anything, as the validator does; False only for tests that prove the
    sandbox and the judgement hold on their own."""
    graph_replays: Annotated[int, Field(ge=3, le=50)] = 3
    """CUDA-graph replays per captured shape, each with fresh inputs copied in and outputs poisoned."""
    policy: SandboxPolicy | None = None
    """Resource bounds for the child; None picks the defaults for the device."""

    def sandbox_policy(self) -> SandboxPolicy:
        if self.policy is not None:
            return self.policy
        if self.device == "cuda":
            return SandboxPolicy(gpu=True, address_space_bytes=None, memory_bytes=64 << 30)
        return SandboxPolicy()


class VerifyRow(Record):
    """One (op, dtype, shape) outcome over all its trials."""

    slot: str
    variant: str
    dtype: str
    shape: str
    """Base shape label; `counts` are the jittered token counts actually used."""
    counts: list[int] = []
    max_abs_err: float | None = None
    """Largest |actual - expected| over the trials that produced finite outputs."""
    trials: int = 0
    """Trials that completed and were judged."""
    status: Status
    reason: str = ""

    @model_validator(mode="after")
    def _fail_has_reason(self):
        if self.status in (Status.FAIL, Status.N_A, Status.NO_DECISION) and not self.reason:
            raise ValueError(f"a {self.status.value} row must carry a reason")
        return self


class VerifyReport(Record):
    """Everything needed to read, replay and archive one verify run."""

    bundle_id: str
    identity: str
    """Canonical SHA-256 of the bundle that was verified."""
    seed: int
    """The secret used; pass it as --seed to replay exactly."""
    device: str
    arch: str
    """cpu or the GPU's sm_XX."""
    sandboxed: bool
    bounds: list[str] = []
    """Which sandbox bounds held: namespaces, rlimits, pids, memory."""
    rows: list[VerifyRow]
    seconds: float = 0.0
    env: EnvIdentity | None = None
    """What the verification ran on (hotfloat.env.collect()); None only in reports made without it."""

    @computed_field
    @property
    def status(self) -> Status:
        """Overall: any FAIL fails; N/A alone means nothing applicable ran."""
        return combine([r.status for r in self.rows])

    def reasons(self) -> list[tuple[list[int], VerifyRow]]:
        """Each distinct (op, status, reason), with the rows (numbered from 1) that gave it, in first-seen order: one
        mistake that fails every row is one reason, not one per row."""
        seen: dict[tuple[str, str, Status, str], tuple[list[int], VerifyRow]] = {}
        for i, r in enumerate(self.rows, 1):
            if r.reason:
                seen.setdefault((r.slot, r.variant, r.status, r.reason), ([], r))[0].append(i)
        return list(seen.values())

    @model_validator(mode="wrap")
    @classmethod
    def _derived_status(cls, data, handler):
        """A report read back carries the status it was written with; it is derived, so it must agree with the rows."""
        claimed = data.get("status") if isinstance(data, dict) else None
        report = handler({k: v for k, v in data.items() if k != "status"} if isinstance(data, dict) else data)
        if claimed is not None and Status(claimed) is not report.status:
            raise ValueError(f"status {claimed} does not match the rows' {report.status.value}")
        return report
