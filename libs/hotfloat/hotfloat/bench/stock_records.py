"""What a stock kernel is to the bench: its call, what it overwrites, and the per-set state it prepares outside the
timed region. Kept apart from the kernels themselves (stock.py and the adapter modules beside it), which all build
these records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Prepared:
    """What a stock kernel needs beside one input set, made once per set outside the timed region: workspaces, its own
    output buffers and inputs converted to its layout (`extra`, merged into the set it is called with), and `refresh`,
    which remakes the converted inputs after the harness draws fresh values into the set (also outside timing)."""

    extra: dict[str, object]
    refresh: Callable[[], None]


@dataclass(frozen=True)
class Stock:
    """One stock implementation of a slot. `fn` returns the slot's outputs in ABI order. A kernel that writes over
    some of its inputs names them in `overwrites`: the harness then gives every call its own copies, refilled from the
    pristine input set before the call and outside its timed region. A kernel that needs per-set state (`prepare`)
    writes only its own buffers."""

    name: str
    fn: Callable[[Mapping[str, object]], "torch.Tensor | tuple[torch.Tensor, ...]"]
    overwrites: tuple[str, ...] = ()
    probe: bool = False
    """True for a library kernel: its first call may build it, and a failure there skips it with the reason."""
    prepare: Callable[[Mapping[str, object]], Prepared] | None = None

    def __post_init__(self):
        if self.prepare is not None and self.overwrites:
            raise ValueError(f"stock {self.name}: a prepared kernel writes only its own buffers, not {self.overwrites}")
