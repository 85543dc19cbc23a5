"""What one op is checked on: cases (dtype x shape) with secretly jittered token counts, and the calls' secret order.

All randomness comes from one secret seed, so a run replays exactly with --seed, yet a bundle cannot predict
the token counts, the drawn shape, the paddings, the output poison or the call order from public data. The tensors
of each call are `inputs.prepare`'s.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..bundle import Op
from ..slots import SlotSpec
from ..slots.spec import DimRange

PAD_STEP = 8
"""Row paddings are multiples of 8 elements: every row stays 16-byte aligned, as the engine's padded views are."""
MAX_PAD_STEPS = 32


@dataclass(frozen=True)
class Case:
    """One row of the verdict: a dtype and base shape, with the per-trial token counts and row paddings."""

    index: int
    dtype: str
    dims: dict[str, int]
    counts: tuple[int, ...]
    pads: tuple[int, ...]
    drawn: bool = False
    public: dict[str, int] | None = None
    """The slot's shape before the CPU budget scaled its count dim, when it did."""
    input_pads: tuple[int, ...] = ()
    """Per trial, the padding of token-indexed inputs' rows (as a view into a wider engine tensor has); empty: none."""

    @property
    def label(self) -> str:
        text = ",".join(f"{k}={v}" for k, v in self.dims.items())
        if self.public and self.public != self.dims:
            text += f" (cpu-scaled from {','.join(f'{k}={v}' for k, v in self.public.items())})"
        return f"drawn {text}" if self.drawn else text

    @property
    def arena(self) -> str:
        return f"case{self.index}"


@dataclass(frozen=True)
class Call:
    """One kernel invocation: which case, which trial, and the seed of its fresh inputs."""

    case: Case
    trial: int
    seed: int


def jitter(count: int, rng: random.Random, lo: int, hi: int | None) -> int:
    """A token count within a quarter of `count` (at least 2 either way), inside the variant's range."""
    spread = max(2, count // 4)
    value = rng.randint(max(1, count - spread), count + spread)
    return max(lo, min(value, hi if hi is not None else value))


def _log_uniform(rng: random.Random, r: DimRange) -> int:
    """A size spread evenly over orders of magnitude within the range, on its multiple."""
    lo = -(-r.lo // r.multiple) * r.multiple
    hi = max(lo, r.hi // r.multiple * r.multiple)
    value = round(math.exp(rng.uniform(math.log(lo), math.log(hi))) / r.multiple) * r.multiple
    return min(hi, max(lo, value))


def _largest(slot: SlotSpec, dims: dict[str, int]) -> int:
    return max(math.prod(slot.shape_of(a, dims)) for a in slot.args if a.shape)


def _fit(slot: SlotSpec, dims: dict[str, int], max_elements: int | None) -> dict[str, int]:
    """Scales the count dim down until no tensor exceeds `max_elements` (the CPU interpreter's budget)."""
    if max_elements is None:
        return dims
    largest = _largest(slot, dims)
    if largest > max_elements:
        dims[slot.count_dim] = max(1, dims[slot.count_dim] * max_elements // largest)
    return dims


def _ranged(slot: SlotSpec) -> bool:
    """Whether the slot's ranges name every dim of its shapes, so a whole shape can be drawn from them."""
    return bool(slot.ranges) and all(set(s.dims) <= set(slot.ranges) for s in slot.shapes)


def drawn_shape(
    slot: SlotSpec, rng: random.Random, trials: int, lo: int, hi: int | None, pool: list, max_elements: int | None
) -> tuple[dict[str, int], tuple[int, ...]]:
    """A shape no bundle can predict: every dim over the slot's whole range (or a published shape when the slot has
    no ranges) and a token count per trial drawn over the whole count range the variant and budget allow."""
    if not _ranged(slot):
        dims = dict(rng.choice(pool).dims)
        dims[slot.count_dim] = rng.randint(1, max(1, dims[slot.count_dim]))
        dims = _fit(slot, dims, max_elements)
        return dims, tuple(jitter(dims[slot.count_dim], rng, lo, hi) for _ in range(trials))
    dims = {name: _log_uniform(rng, r) for name, r in slot.ranges.items() if name != slot.count_dim}
    return _with_counts(slot, rng, dims, trials, lo, hi, max_elements, False)


def _with_counts(
    slot: SlotSpec,
    rng: random.Random,
    dims: dict[str, int],
    trials: int,
    lo: int,
    hi: int | None,
    max_elements: int | None,
    highest: bool,
) -> tuple[dict[str, int], tuple[int, ...]]:
    """Token counts per trial over what the variant and budget allow beside `dims` (its top octave when `highest`)."""
    count = slot.ranges[slot.count_dim]
    top = min(count.hi, hi) if hi is not None else count.hi
    if max_elements is not None:
        top = min(top, max(1, max_elements // _largest(slot, {**dims, slot.count_dim: 1})))
    bottom = max(count.lo, lo, top // 2 if highest else 1)
    span = DimRange(bottom, max(bottom, top))
    counts = tuple(_log_uniform(rng, span) for _ in range(trials))
    return {**dims, slot.count_dim: max(counts)}, counts


def _octave(rng: random.Random, r: DimRange, top: bool) -> int:
    """A size in the range's top octave at an odd multiple of its step (so no coarser alignment holds), or in its
    bottom octave."""
    lo = -(-r.lo // r.multiple) * r.multiple
    hi = max(lo, r.hi // r.multiple * r.multiple)
    band = DimRange(max(lo, hi // 2), hi, r.multiple) if top else DimRange(lo, max(lo, min(hi, 2 * lo)), r.multiple)
    value = _log_uniform(rng, band)
    if top and value // r.multiple % 2 == 0:
        value += -r.multiple if value - r.multiple >= band.lo else r.multiple if value + r.multiple <= hi else 0
    return value


def corner_shapes(
    slot: SlotSpec, rng: random.Random, trials: int, lo: int, hi: int | None, max_elements: int | None
) -> list[tuple[dict[str, int], tuple[int, ...]]]:
    """The two corners of the slot's ranges that one log-uniform draw seldom reaches, where block-size limits and
    missing tails live: every hidden dim in its top octave at an odd multiple of its step (with the token counts
    that fit), and the top octave of the token counts that fit beside hidden dims from their bottom octave."""
    if not _ranged(slot):
        return []
    shapes = []
    for wide in (True, False):
        dims = {name: _octave(rng, r, wide) for name, r in slot.ranges.items() if name != slot.count_dim}
        shapes.append(_with_counts(slot, rng, dims, trials, lo, hi, max_elements, not wide))
    return shapes


def make_cases(
    slot: SlotSpec,
    op: Op,
    dtypes: list[str],
    device: str,
    rng: random.Random,
    trials: int,
    max_shapes: int | None,
    cpu_max_elements: int | None = None,
) -> list[Case]:
    """Every verification shape per dtype (count dim jittered per trial), plus one shape drawn from the secret and
    the two corners of the slot's ranges (`corner_shapes`).

    On cpu, `cpu_max_elements` shrinks the count dim of large shapes: the Triton interpreter costs about a
    microsecond per element, while the hidden dims (where tails and masks live) stay as the slot defines them.
    Within each dtype, contiguous and padded outputs both occur at any trial count; token-indexed inputs get rows
    padded independently of the outputs'.
    """
    lo, hi = op.metadata.min_num_tokens, op.metadata.max_num_tokens
    budget = cpu_max_elements if device == "cpu" else None
    # a drawn shape is never larger than the largest published one: its cost stays inside the op's time budget
    published = max(_largest(slot, dict(s.dims)) for s in slot.shapes if device == "cuda" or s.cpu)
    cap = published if budget is None else min(budget, published)
    shapes = [s for s in slot.shapes if device == "cuda" or s.cpu][: max_shapes or None]
    pool = [s for s in (*slot.bench_shapes, *slot.shapes) if device == "cuda" or s.cpu]
    cases: list[Case] = []
    for dtype in dtypes:
        planned = []
        for shape in shapes:
            dims = _fit(slot, dict(shape.dims), budget)
            counts = tuple(jitter(dims[slot.count_dim], rng, lo, hi) for _ in range(trials))
            planned.append((dims, counts, dict(shape.dims)))
        planned.append((*drawn_shape(slot, rng, trials, lo, hi, pool, cap), None))
        planned += [(*corner, None) for corner in corner_shapes(slot, rng, trials, lo, hi, cap)]
        rows = 0
        for dims, counts, public in planned:
            # with one trial, cases of several rows alternate padded/contiguous starting padded (a padding needs a
            # second row to be written into); single-row cases draw it
            padded = rows % 2 == 0 if max(counts) > 1 else rng.random() < 0.5
            rows += max(counts) > 1
            cases.append(
                Case(
                    len(cases),
                    dtype,
                    dims,
                    counts,
                    _pads(slot, trials, rng, padded),
                    drawn=public is None,
                    public=public,
                    input_pads=_pads(slot, trials, rng, rng.random() < 0.5),
                )
            )
    return cases


def _pads(slot: SlotSpec, trials: int, rng: random.Random, padded: bool) -> tuple[int, ...]:
    """Per trial, 0 (contiguous rows) or a secret padding; with two or more trials both occur, with one `padded`
    decides. Slots without strided outputs (collectives) get contiguous tensors only."""
    if not slot.strided_outputs:
        return (0,) * trials
    if trials == 1:
        flags = [padded]
    else:
        flags = [True, False] + [rng.random() < 0.5 for _ in range(trials - 2)]
        rng.shuffle(flags)
    return tuple(PAD_STEP * rng.randint(1, MAX_PAD_STEPS) if f else 0 for f in flags)


def schedule(cases: list[Case], trials: int, rng: random.Random) -> list[Call]:
    """All calls in a secret order: no position in the sequence is special."""
    calls = [Call(c, t, rng.getrandbits(63)) for c in cases for t in range(trials)]
    rng.shuffle(calls)
    return calls
