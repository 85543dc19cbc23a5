"""The closures the bench times, one per input set: ours calling the candidate with its own NaN-poisoned outputs,
and a stock kernel per set, or per graph position on its own copies when it overwrites its inputs, so a timed loop
never reuses what an earlier call left behind."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..slots import Role, SlotSpec
from .stock import Stock
from .timing import GRAPH_CALLS, Prepare

MAX_SET_BYTES = 4 << 30
"""Input copies one kernel may hold on the device (the sets, or a kernel's per-call copies)."""


def ours_calls(slot: SlotSpec, entry: Callable, dims, dt, sets, device: str) -> list[Callable[[], tuple]]:
    """One closure per input set calling the candidate with its own output buffers (poisoned with NaN)."""
    calls = []
    for s in sets:
        outs = {
            a.name: torch.full(slot.shape_of(a, dims), float("nan"), dtype=dt, device=device)
            for a in slot.of_role(Role.OUTPUT)
        }
        args = [outs[a.name] if a.role is Role.OUTPUT else s[a.name] for a in slot.args]
        made = tuple(outs.values())
        calls.append(lambda args=args, made=made: (entry(*args), made)[1])
    return calls


def stock_calls(
    s: Stock, sets, cuda: bool
) -> tuple[list[Callable[[], tuple]], Prepare | None, Callable[[], None] | None]:
    """One call per input set; for a kernel that overwrites inputs, one call per graph position instead, each on
    its own copies, with `prepare(i)` refilling call i's copies and `refill()` all of them (outside timing). A
    prepared kernel's `refill()` remakes its converted inputs from the sets' current values instead."""
    if s.prepare is not None:
        prepared = [s.prepare(t) for t in sets]

        def refresh_all() -> None:
            for p in prepared:
                p.refresh()

        return [lambda t=t | p.extra: outputs(s.fn(t)) for t, p in zip(sets, prepared, strict=True)], None, refresh_all
    if not s.overwrites:
        return [lambda t=t: outputs(s.fn(t)) for t in sets], None, None
    per_call = sum(sets[0][n].numel() * sets[0][n].element_size() for n in s.overwrites)
    n = max(len(sets), min(GRAPH_CALLS, MAX_SET_BYTES // per_call)) if cuda else len(sets)
    src = [sets[i % len(sets)] for i in range(n)]
    work = [{k: src[i][k].clone() for k in s.overwrites} for i in range(n)]
    dst_all = [w[k] for w in work for k in s.overwrites]
    src_all = [src[i][k] for i in range(n) for k in s.overwrites]

    def prepare(i: int) -> None:
        for k in s.overwrites:
            work[i][k].copy_(src[i][k])

    calls = [lambda i=i: outputs(s.fn(src[i] | work[i])) for i in range(n)]
    return calls, prepare, lambda: torch._foreach_copy_(dst_all, src_all)


def outputs(result) -> tuple:
    """A stock kernel's outputs as a tuple in ABI order, whether it returned one tensor or several."""
    return result if isinstance(result, tuple) else (result,)
