"""One implementation timed on a row's input sets and checked three times around the timing (first call, last timed
calls, fresh inputs through what was timed): the loop the harness runs per kernel, apart from the table it builds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..slots import DTYPES, Role, SlotSpec
from ..slots.collective import stack_ranks
from .check import check
from .records import Impl
from .timing import GRAPH_CALLS, CudaTimer, Prepare, cold_cpu


@dataclass(frozen=True)
class Measure:
    """How one bench run times a kernel: on `device`, `budget` seconds per measurement, through `timer` on CUDA."""

    device: str
    budget: float
    timer: CudaTimer | None
    group: object | None = None
    """The process group a collective slot's calls get (harness.one_rank_group); None when the bundle has none."""

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    def make_set(self, slot: SlotSpec, dims, dt, gen) -> dict:
        """One input set from the slot's own generator, drawn on the bench device (drawing 8192 x 16384 on the host
        took seconds per set, and the checks draw every set again), with the slot's scalars and group."""
        with torch.device(self.device):
            t = {k: v.to(self.device) for k, v in slot.make_inputs(dims, dt, gen).items()}
        return (
            t
            | {a.name: float(a.default) for a in slot.of_role(Role.SCALAR)}
            | {a.name: self.group for a in slot.of_role(Role.GROUP)}
        )

    @staticmethod
    def reference(slot: SlotSpec, s: dict) -> tuple[dict, dict]:
        """The reference of one set and the magnitudes its tolerance applies to; a collective's sees the set as the
        only rank of a one-rank group."""
        return slot.expect(stack_ranks(slot, [s]) if slot.of_role(Role.GROUP) else s)

    def time_impl(
        self,
        name: str,
        calls,
        slot: SlotSpec,
        dtype: str,
        dims,
        sets,
        gen,
        prepare: Prepare | None = None,
        refill: Callable[[], None] | None = None,
    ) -> Impl:
        """Times one implementation; a kernel that raises (or cannot be captured in a graph) fails its row."""
        try:
            return self._time_impl(name, calls, slot, dtype, dims, sets, gen, prepare, refill)
        except Exception as e:  # the kernel's own fault, reported as data like any wrong output
            if self.cuda:
                torch.cuda.synchronize()
            return Impl(name=name, graph=None, cold=None, check="FAIL", reason=f"raised {type(e).__name__}: {e}"[:500])

    def _time_impl(
        self,
        name: str,
        calls,
        slot: SlotSpec,
        dtype: str,
        dims,
        sets,
        gen,
        prepare: Prepare | None,
        refill: Callable[[], None] | None,
    ) -> Impl:
        """Times one implementation and checks it three times: first call, last timed calls, fresh inputs after.
        With `refill` (a kernel that overwrites its inputs) every call has its own copies, refilled before it runs
        and outside the timed region, and the graph holds one call per copy instead of GRAPH_CALLS."""
        refs = [self.reference(slot, s) for s in sets]
        refill = refill or (lambda: None)
        refill()
        reason = check(slot, dtype, [c() for c in calls], refs, "first call")
        graph = None
        if self.cuda:
            cold, last = self.timer.cold(calls, self.budget, prepare)
            reason = reason or check(slot, dtype, last, refs, "after the cold loop")
            k = GRAPH_CALLS if prepare is None else len(calls)
            refill()
            g, captured = self.timer.capture(calls, k)
            graph = self.timer.replay(g, k, self.budget, refill if prepare else None)
            refs = self.refresh(slot, dims, dtype, sets, gen, captured)
            refill()
            g.replay()
            torch.cuda.synchronize()
            reason = reason or check(slot, dtype, captured, refs, "graph replay on fresh inputs")
            del g, captured
        else:
            cold, last = cold_cpu(calls, self.budget, prepare)
            reason = reason or check(slot, dtype, last, refs, "after the timed loop")
            refs = self.refresh(slot, dims, dtype, sets, gen, last)
            refill()
            reason = reason or check(slot, dtype, [c() for c in calls], refs, "fresh inputs after the timed loop")
        return Impl(name=name, graph=graph, cold=cold, check="FAIL" if reason else "PASS", reason=reason)

    def refresh(self, slot: SlotSpec, dims, dtype: str, sets, gen, results) -> list[dict]:
        """New values into the same input buffers and NaN into every output seen, so stale results cannot pass;
        returns the new references."""
        for s in sets:
            for k, v in self.make_set(slot, dims, DTYPES[dtype], gen).items():
                if isinstance(v, torch.Tensor):
                    s[k].copy_(v)
        for outs in results:
            for o in outs or ():
                o.fill_(float("nan"))
        return [self.reference(slot, s) for s in sets]
