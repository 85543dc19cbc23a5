"""What admission reports: per-cubin load and verification results, the worker's schema-checked answer, and the
verdict."""

from __future__ import annotations

from pydantic import Field

from ..record import Record
from ..verdict import Status


class ShapeRow(Record):
    """One verification shape of one cubin: whether its output matched the reference, and how far it was off."""

    shape: str
    ok: bool
    max_abs_err: float
    problems: list[str] = Field(max_length=16)


class KernelAdmission(Record):
    """One cubin's admission: what the driver loaded and how each verification shape went."""

    cubin: str
    ok: bool
    reason: str = Field(max_length=2000)
    loaded: dict[str, list[tuple[int, int]]] = Field(default_factory=dict, max_length=64)
    """Kernel name -> (offset, size) parameters, as cuKernelGetParamInfo reported them."""
    rows: list[ShapeRow] = Field(default_factory=list, max_length=64)


class WorkerReport(Record):
    """The worker's answer, schema-checked before the parent believes any of it."""

    device: str = Field(max_length=200)
    results: list[KernelAdmission] = Field(max_length=256)
    elapsed_s: float


class AdmissionReport(Record):
    """The admission verdict: PASS only when every cubin loaded as declared and verified on a GPU."""

    bundle_identity: str
    status: Status
    reasons: list[str]
    device: str
    """"cuda:<name>" where the worker ran, or "cpu" when the load was skipped."""
    seed: int
    kernels: list[KernelAdmission] = Field(default_factory=list)
