"""The bench report as strict records: what `hotfloat bench --json` prints and `docs/benchmarks.md` is built from."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from ..record import Record
from ..verdict import Status


class Stat(Record):
    """Per-call time of one implementation under one timing mode, over repetitions."""

    median_us: float
    """Median per-call time in microseconds."""
    q1_us: float
    """First quartile: with q3, the spread."""
    q3_us: float
    """Third quartile."""
    rse: float
    """Relative standard error of the mean (std / sqrt(n) / mean): the stopping rule aims below 1%."""
    n: Annotated[int, Field(ge=1)]
    """Repetitions taken."""


class Impl(Record):
    """One implementation timed on one shape: the bundle's kernel or a stock kernel."""

    name: str
    """`ours:<variant>` for the bundle's kernel, else the stock kernel's name (torch-eager, flashinfer, ...)."""
    graph: Stat | None
    """Per call inside a replayed CUDA graph of back-to-back calls (how the engine runs decode); None on CPU."""
    cold: Stat | None
    """One call after an L2 flush, timed alone with events (wall clock on CPU); None when the kernel raised."""
    check: str
    """PASS when every output matched the slot reference, both before and after the timed loops, else FAIL."""
    reason: str = ""
    """Why the check failed, if it did."""


class Row(Record):
    """One slot, dtype and shape: our kernel beside the stock kernels, against the measured ceilings."""

    slot: str
    dtype: str
    dims: dict[str, int]
    tokens: int
    """The slot's count dim (tokens) for this shape."""
    bytes: int
    """Bytes that must cross DRAM for one call (each input read once, each output written once)."""
    flops: int
    impls: list[Impl]
    """Ours first, then each stock kernel that could run."""
    time_us: float | None
    """Our headline time: the graph median on CUDA, the cold median on CPU; None when no variant covers the shape."""
    ratio: dict[str, float]
    """Our time / the stock kernel's time, per stock kernel that passed its checks (same timing mode as time_us);
    < 1 means ours is faster."""
    best_stock: str | None
    """The fastest stock kernel on this shape among those that passed their checks."""
    ratio_best: float | None
    """Our time / best_stock's time: the number the targets are judged by."""
    bandwidth_Bps: float | None
    """Achieved bytes per second at time_us."""
    frac_copy_bw: float | None
    """Achieved bandwidth over the measured copy bandwidth."""
    flops_per_s: float | None
    frac_gemm: float | None
    """Achieved FLOP/s over the measured GEMM rate."""
    floor_multiple: float | None
    """time_us over the empty-kernel launch floor of the same timing mode."""


class Ceilings(Record):
    """Device limits measured once per run, in the same process, so every fraction uses this device's numbers."""

    copy_Bps: float
    """Device-to-device copy of a large buffer, bytes read plus written per second."""
    gemm_flops: float
    """A large matrix product's rate (bf16 on CUDA, fp32 on CPU)."""
    floor_graph_us: float | None
    """Per-kernel time of an empty kernel replayed back to back in a CUDA graph; None on CPU."""
    floor_cold_us: float
    """One empty-kernel launch timed alone (a Python call in the CPU interpreter)."""


class Skipped(Record):
    """A stock library that was asked for but could not run a slot here, and why (not installed, build failed)."""

    slot: str
    name: str
    reason: str


class Report(Record):
    """Everything one `hotfloat bench` run measured."""

    bundle_id: str
    identity: str
    """The bundle's content hash: which code these numbers belong to."""
    device: str
    """cpu or cuda."""
    meaningful: bool
    """False on CPU: the Triton interpreter makes speed numbers meaningless; only the harness is exercised."""
    note: str
    environment: dict[str, str]
    """GPU, driver, CUDA, torch, triton and python versions."""
    method: dict[str, str]
    """How the numbers were taken (flush size, buffer sets, graph length, stopping rule)."""
    ceilings: Ceilings
    rows: list[Row]
    skipped: list[Skipped]
    """Stock libraries left out of the run, each with its reason."""
    status: Status
    """PASS when every check of our kernels passed, FAIL otherwise."""
    sandboxed: bool = False
    """Whether the bench child ran in the sandbox (False with --unsandboxed, and in reports older than the sandbox)."""
    bounds: list[str] = []
    """Which sandbox bounds held around the child (namespaces, seccomp, rlimits, pids, memory, and how)."""


class ChildError(Record):
    """Why the bench child stopped without a report: a hotfloat error, by class name, and its message."""

    kind: str
    """The HotfloatError subclass the child caught; the parent raises the same class (the root for unknown names)."""
    message: str


class ChildResult(Record):
    """The bench child's one answer on its result channel: the report, or the error that stopped the run."""

    report: Report | None = None
    error: ChildError | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ChildResult:
        if (self.report is None) == (self.error is None):
            raise ValueError("exactly one of report and error")
        return self
