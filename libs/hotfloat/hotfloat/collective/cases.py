"""The burst a collective op is verified on: per dtype its published shapes with secret token counts, one shape drawn
over the slot's range and the range's corners, largest to smallest and back up. A case is a dict of the dtype and
every dim of the slot, the count dim first."""

from __future__ import annotations

import math
import random

from ..bundle import Op
from ..slots import get_slot
from ..verify.plan import corner_shapes, drawn_shape, jitter

CPU_MAX_ELEMENTS = 1 << 18
"""The drawn shape's budget on CPU, as for single-op verify."""


def burst(op: Op, dtypes: list[str], device: str, rng: random.Random) -> list[dict]:
    """Per dtype, the published shapes with secretly jittered token counts plus one shape drawn over the slot's whole
    range and its two corners (`corner_shapes`: top-octave hidden size at an odd step, many tokens beside a small
    one), largest to smallest then back up: a buffer kept from a bigger call shows up as wrong."""
    slot = get_slot(op.entry.slot)
    lo, hi = op.metadata.min_num_tokens, op.metadata.max_num_tokens
    budget = CPU_MAX_ELEMENTS if device == "cpu" else None
    count = slot.count_dim
    here = [s for s in slot.shapes if device == "cuda" or s.cpu]  # a slot without ranges draws among these
    public = [s for s in here if hi is None or s.dims[count] <= hi]
    cases = []
    for dt in dtypes:
        shapes = [{**s.dims, count: jitter(s.dims[count], rng, lo, hi)} for s in public]
        shapes.append(drawn_shape(slot, rng, 1, lo, hi, here, budget)[0])
        shapes += [dims for dims, _ in corner_shapes(slot, rng, 1, lo, hi, budget)]
        shapes.sort(key=lambda d: math.prod(d.values()), reverse=True)
        cases += [{"dtype": dt, count: d[count], **d} for d in shapes + shapes[::-1][1:]]  # the count dim first
    return cases


def case_dims(c: dict) -> dict[str, int]:
    """A case's shape: every dim of the slot, the count dim first."""
    return {k: v for k, v in c.items() if k != "dtype"}


def case_label(c: dict) -> str:
    """A case's shape as its rows print it, e.g. "T=8,H=4096"."""
    return ",".join(f"{k}={v}" for k, v in case_dims(c).items())
