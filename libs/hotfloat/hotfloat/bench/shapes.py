"""Which shapes a bench run times: the slot's bench shapes, the decode grid of issue 13, or shapes named on the command line."""

from __future__ import annotations

from ..errors import InputError
from ..slots import Shape, SlotSpec

DECODE_TOKENS = (1, 8, 32, 128)
DECODE_HIDDEN = (2880, 4096, 8192)
CPU_ELEMENTS = 128 * 4096
"""Largest count x hidden the CPU interpreter is asked to run, so CI stays fast."""
SETS = ("bench", "decode", "all")


def hidden_dim(slot: SlotSpec) -> str | None:
    """The one dim besides the token count that the bench shapes vary; None when there are more (attention)."""
    others = [d for d in slot.bench_shapes[0].dims if d != slot.count_dim]
    return others[0] if len(others) == 1 else None


def decode_shapes(slot: SlotSpec) -> tuple[Shape, ...]:
    """Decode-step calls: few tokens at the hidden sizes of current models (token-row slots only; attention's own
    bench shapes are decode steps already)."""
    h = hidden_dim(slot)
    if h is None:
        return ()
    return tuple(
        Shape({slot.count_dim: t, h: d}, cpu=t * d <= CPU_ELEMENTS) for d in DECODE_HIDDEN for t in DECODE_TOKENS
    )


def parse_shape(text: str) -> dict[str, int]:
    """Parses "T=1,D=4096" from the command line."""
    dims: dict[str, int] = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip().isidentifier() or not value.strip().isdigit() or int(value) < 1:
            raise InputError(f"shape {text!r}: expected NAME=POSITIVE_INT pairs separated by commas, e.g. T=8,D=4096")
        dims[name.strip()] = int(value)
    return dims


def select(slot: SlotSpec, which: str, explicit: list[dict[str, int]], device: str) -> list[Shape]:
    """The shapes to time for one slot, in token order, without duplicates; huge ones are left off the CPU."""
    if explicit:
        keys = set(slot.bench_shapes[0].dims)
        shapes = [Shape(d, cpu=True) for d in explicit if set(d) == keys]
    else:
        if which not in SETS:
            raise InputError(f"shape set {which!r}: expected one of {', '.join(SETS)}")
        shapes = list(slot.bench_shapes if which in ("bench", "all") else ())
        shapes += decode_shapes(slot) if which in ("decode", "all") else ()
    seen: dict[tuple, Shape] = {}
    for s in shapes:
        if device == "cuda" or s.cpu:
            seen.setdefault(tuple(sorted(s.dims.items())), s)
    h = hidden_dim(slot)
    if h is None:
        return list(seen.values())
    return sorted(seen.values(), key=lambda s: (s.dims[h], s.dims[slot.count_dim]))
