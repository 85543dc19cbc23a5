"""Times a bundle's kernels against the stock kernels on each slot's shapes and builds the report's rows; each kernel
is timed by measure.py, which checks every output before the timed loops, after them, and once more on fresh inputs
through the very graph that was timed."""

from __future__ import annotations

import math
import statistics
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from ..bundle import Op
from ..errors import InfrastructureError, InputError, no_gpu
from ..slots import DTYPES, Role, Shape, SlotSpec, get_slot
from . import ceilings as ceil
from .calls import MAX_SET_BYTES, ours_calls, stock_calls
from .load import LoadedBundle
from .measure import Measure
from .records import Ceilings, Impl, Report, Row, Skipped
from .shapes import select
from .stock import LIBRARIES, Stock, stock_kernels
from .timing import GRAPH_CALLS, CudaTimer

CPU_NOTE = (
    "CPU run through the Triton interpreter: the times are meaningless for speed; "
    "this exercises the harness and the output checks only. Use --device cuda for numbers."
)
CUDA_NOTE = (
    "time_us is the per-call median inside a replayed CUDA graph of back-to-back calls over rotated input "
    "sets (decode-sized sets stay in L2, as after the producing kernel in the engine); cold is one call "
    "after an L2 flush, timed alone with events."
)
MAX_SETS = 64
Progress = Callable[[int, int, str], None]
PROGRESS = "hotfloat-progress"
"""The prefix of the child's progress lines, `hotfloat-progress DONE TOTAL LABEL`, which run_bench forwards."""


@dataclass(frozen=True)
class Options:
    """What to time and how long to spend on each measurement."""

    device: str = "cpu"
    dtypes: tuple[str, ...] = ("bf16",)
    shape_set: str = "all"
    shapes: tuple[Mapping[str, int], ...] = ()
    budget_s: float | None = None
    """Seconds per measurement before the RSE rule gives up; defaults to 0.25 on CUDA and 0.02 on CPU."""
    seed: int = 0
    stock: tuple[str, ...] = LIBRARIES
    """Stock libraries to time beside the torch paths when they load (stock.py: the shared convention or an adapter)."""


def bench_in_process(path: str, options: Options, progress: Progress | None = None) -> Report:
    """Loads the bundle into this process, measures the device's ceilings, then every (slot, dtype, shape).
    On CPU the Triton interpreter must have been chosen before triton was imported (run_bench's child does that)."""
    if options.device not in ("cpu", "cuda"):
        raise InputError(f"device {options.device!r}: expected cpu or cuda")
    if options.device == "cuda" and not torch.cuda.is_available():
        raise no_gpu("bench")
    if options.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise InfrastructureError("bench on CPU needs TRITON_INTERPRET=1 set before triton is imported")
    loaded = LoadedBundle(path, device_archs(options.device))
    try:
        return _Run(loaded, options).report(progress)
    finally:
        loaded.close()


def device_archs(device: str) -> set[str]:
    """The architectures an op must list to run here: cpu, or the GPU's sm_XY and its sm_XYa."""
    if device == "cpu":
        return {"cpu"}
    major, minor = torch.cuda.get_device_capability(0)
    return {f"sm_{major}{minor}", f"sm_{major}{minor}a"}


def one_rank_group(device: str):
    """A process group of this process alone (NCCL on CUDA, gloo on CPU, its rendezvous in memory), so a collective's
    kernel and stock path run on one device: timed for their own work and the collective's launch."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if device == "cuda" else "gloo", store=dist.HashStore(), rank=0, world_size=1)
    return dist.group.WORLD


class _Run:
    """One bench run: the device's timer and architecture, and the loaded bundle's ops."""

    def __init__(self, loaded: LoadedBundle, options: Options):
        self.loaded, self.opt = loaded, options
        self.cuda = options.device == "cuda"
        self.budget = options.budget_s if options.budget_s is not None else (0.25 if self.cuda else 0.02)
        self.l2 = ceil.l2_bytes() if self.cuda else 0
        self.timer = CudaTimer(self.l2) if self.cuda else None
        collective = any(get_slot(op.entry.slot).of_role(Role.GROUP) for op in loaded.bundle.ops)
        self.group = one_rank_group(options.device) if collective else None
        self.measure = Measure(options.device, self.budget, self.timer, self.group)
        self.skipped: dict[tuple[str, str], str] = {}
        """(slot, library) -> why it is left out; filled as slots are met, so a failed build is tried once."""
        self._probed: set[tuple[str, str]] = set()

    def tasks(self) -> list[tuple[SlotSpec, str, Shape]]:
        """Every (slot, dtype, shape) to time, decided before any timing so bad requests fail fast."""
        slots = list(dict.fromkeys(op.entry.slot for op in self.loaded.bundle.ops))
        out = []
        for slot in map(get_slot, slots):
            offered = {d for op in self.loaded.bundle.ops if op.entry.slot == slot.name for d in op.dtypes}
            for dtype in (d for d in self.opt.dtypes if d in offered):
                out += [
                    (slot, dtype, s) for s in select(slot, self.opt.shape_set, list(self.opt.shapes), self.opt.device)
                ]
        if not out:
            raise InputError(
                f"nothing to time: the bundle offers no op for dtypes {list(self.opt.dtypes)} and these shapes"
            )
        return out

    def report(self, progress: Progress | None) -> Report:
        """Measures the ceilings once, then each task; the run fails if any of our kernels failed a check, and is N/A
        when none ran (no op is built for this device: every row timed the stock kernels only)."""
        tasks = self.tasks()
        c = ceil.measure_cuda(self.timer, self.budget) if self.cuda else ceil.measure_cpu(self.budget)
        rows = []
        for i, (slot, dtype, shape) in enumerate(tasks):
            if progress:
                progress(i, len(tasks), f"{slot.name} {dtype} {shape.label}")
            rows.append(self.row(slot, dtype, shape, c, seed=self.opt.seed * 7919 + i))
            if self.cuda:
                torch.cuda.empty_cache()
        failed = any(r.impls and r.impls[0].name.startswith("ours") and r.impls[0].check != "PASS" for r in rows)
        b = self.loaded.bundle
        return Report(
            bundle_id=b.manifest.bundle_id,
            identity=b.identity,
            device=self.opt.device,
            meaningful=self.cuda,
            note=CUDA_NOTE if self.cuda else CPU_NOTE,
            environment=ceil.environment(self.opt.device),
            method=self.method(),
            ceilings=c,
            rows=rows,
            status="FAIL"
            if failed
            else "PASS"
            if any(r.impls and r.impls[0].name.startswith("ours") for r in rows)
            else "N/A",
            skipped=[Skipped(slot=k[0], name=k[1], reason=v) for k, v in self.skipped.items()],
        )

    def method(self) -> dict[str, str]:
        """How this run took its numbers, recorded beside them."""
        m = {
            "budget_s": f"{self.budget:g}",
            "stop": "relative standard error < 1% or budget spent",
            "sets": f"rotated input sets: max(2, min({MAX_SETS}, ceil(3 x L2 / bytes per call)))" if self.cuda else "2",
        }
        if self.group is not None:
            m["group"] = "collectives on a one-rank process group: their own work and launch, no traffic between GPUs"
        if self.cuda:
            m |= {
                "graph_calls": str(GRAPH_CALLS),
                "l2_flush_bytes": str(self.timer.flush.numel() * 4),
                "persisting_l2_reset": str(self.timer.persisting_reset),
            }
        return m

    def route(self, slot: SlotSpec, dtype: str, tokens: int) -> Op | None:
        """The variant the validator would route this call to, or None (then the stock kernel runs)."""
        archs = self.loaded.archs
        for op in self.loaded.bundle.ops:
            md = op.metadata
            if (
                op.entry.slot == slot.name
                and dtype in op.dtypes
                and archs & set(op.entry.architectures)
                and md.min_num_tokens <= tokens <= (md.max_num_tokens or tokens)
            ):
                return op
        return None

    def row(self, slot: SlotSpec, dtype: str, shape: Shape, c: Ceilings, seed: int) -> Row:
        """Ours (the routed variant) and every stock kernel on the same rotated input sets, against the ceilings."""
        dims, dt = dict(shape.dims), DTYPES[dtype]
        nbytes = slot.bytes_moved(dims, dt.itemsize)
        gen = torch.Generator(device=self.opt.device).manual_seed(seed)
        n_sets = 2 if not self.cuda else max(2, min(MAX_SETS, math.ceil(3 * self.l2 / nbytes), MAX_SET_BYTES // nbytes))
        sets = [self.measure.make_set(slot, dims, dt, gen) for _ in range(n_sets)]
        if slot.bytes_read is not None:  # the sets' own traffic, not the upper bound that sized them
            nbytes = round(statistics.fmean(slot.bytes_read(s, dt.itemsize) for s in sets))
        tokens = dims[slot.count_dim]
        op = self.route(slot, dtype, tokens)
        impls = []
        if op is not None:
            mine = ours_calls(slot, self.loaded.entries[op.key], dims, dt, sets, self.opt.device)
            impls.append(self.measure.time_impl(f"ours:{op.entry.variant}", mine, slot, dtype, dims, sets, gen))
        stocks, skipped = stock_kernels(slot.name, self.opt.stock)
        for name, reason in skipped.items():
            self.skipped.setdefault((slot.name, name), reason)
        for s in stocks:
            if s.probe and not self.probe(slot, s, sets[0]):
                continue
            try:
                fns, prepare, refill = stock_calls(s, sets, self.cuda)
            except Exception as e:  # its per-set setup (a plan, a JIT build for this shape) failed: the row says so
                if self.cuda:
                    torch.cuda.synchronize()
                impls.append(
                    Impl(
                        name=s.name,
                        graph=None,
                        cold=None,
                        check="FAIL",
                        reason=f"setup raised {type(e).__name__}: {e}"[:500],
                    )
                )
                continue
            impls.append(self.measure.time_impl(s.name, fns, slot, dtype, dims, sets, gen, prepare, refill))
        head = {i.name: (i.graph or i.cold).median_us for i in impls if i.cold is not None}
        t = head.get(impls[0].name) if op is not None else None
        ratio = {
            i.name: t / head[i.name]
            for i in impls
            if t and i.check == "PASS" and i.name in head and not i.name.startswith("ours")
        }
        best = max(ratio, key=ratio.get, default=None)  # the fastest stock: the largest ours/stock
        floor = c.floor_graph_us if self.cuda else c.floor_cold_us
        bw = nbytes / (t * 1e-6) if t else None
        fl = slot.flops(dims) / (t * 1e-6) if t else None
        return Row(
            slot=slot.name,
            dtype=dtype,
            dims=dims,
            tokens=tokens,
            bytes=nbytes,
            flops=slot.flops(dims),
            impls=impls,
            time_us=t,
            ratio=ratio,
            best_stock=best,
            ratio_best=ratio[best] if best else None,
            bandwidth_Bps=bw,
            frac_copy_bw=bw / c.copy_Bps if bw else None,
            flops_per_s=fl,
            frac_gemm=fl / c.gemm_flops if fl else None,
            floor_multiple=t / floor if t and floor else None,
        )

    def probe(self, slot: SlotSpec, s: Stock, inputs: dict) -> bool:
        """Calls a library kernel once per slot on a private copy of one input set: its first call may build it
        (FlashInfer's JIT), and a library that cannot build or run here is skipped with the reason, not failed."""
        key = (slot.name, s.name)
        if key not in self.skipped and key not in self._probed:
            try:
                extra = s.prepare(inputs).extra if s.prepare else {}
                s.fn(inputs | extra | {n: inputs[n].clone() for n in s.overwrites})
                if self.cuda:
                    torch.cuda.synchronize()
                self._probed.add(key)
            except Exception as e:  # missing nvcc, a failed JIT build, no kernel for this GPU: the library is absent
                if self.cuda:
                    torch.cuda.synchronize()
                self.skipped[key] = f"first call failed: {type(e).__name__}: {e}"[:300]
        return key in self._probed
