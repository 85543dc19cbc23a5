"""What one op is checked on: cases (dtype x shape) with secretly jittered token counts, and each call's tensors.

All randomness comes from one secret seed, so a run replays exactly with --seed, yet a bundle cannot predict
the token counts, the drawn shape, the paddings, the output poison or the call order from public data.
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, field

import torch

from ..bundle import Op
from ..slots import DTYPES, Role, SlotSpec
from ..slots.spec import DimRange
from . import wire

PAD_STEP = 8
"""Row paddings are multiples of 8 elements: every row stays 16-byte aligned, as the engine's padded views are."""
MAX_PAD_STEPS = 32
POISON_ODDS = (3, 2, 1)
"""Relative odds of a call's output poison: NaNs with random payloads, stale-looking finite values, zeros. Serving
outputs hold stale memory, so no poison family alone may mark a call as judged."""
QUIET_NAN = {"bf16": (7, 0x40), "fp16": (10, 0x200), "fp32": (23, 0x400000)}
"""Mantissa width and the payload arithmetic produces (the canonical quiet NaN), never used as poison."""


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


@dataclass
class Prepared:
    """A call's tensors: what is sent to the child, and what the parent keeps to judge the reply."""

    meta: dict
    sent: list[tuple[wire.TensorHeader, bytes]]
    inputs: dict[str, torch.Tensor]
    outputs: dict[str, wire.TensorHeader]
    expected: dict[str, torch.Tensor]
    scales: dict[str, torch.Tensor] = field(default_factory=dict)
    """Per output, the magnitude its rtol applies to when it is not |expected| (a sum's rounding follows its addends)."""


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


def drawn_shape(slot: SlotSpec, rng: random.Random, trials: int, lo: int, hi: int | None, pool: list,
           max_elements: int | None) -> tuple[dict[str, int], tuple[int, ...]]:
    """A shape no bundle can predict: every dim over the slot's whole range (or a published shape when the slot has
    no ranges) and a token count per trial drawn over the whole count range the variant and budget allow."""
    if not _ranged(slot):
        dims = dict(rng.choice(pool).dims)
        dims[slot.count_dim] = rng.randint(1, max(1, dims[slot.count_dim]))
        dims = _fit(slot, dims, max_elements)
        return dims, tuple(jitter(dims[slot.count_dim], rng, lo, hi) for _ in range(trials))
    dims = {name: _log_uniform(rng, r) for name, r in slot.ranges.items() if name != slot.count_dim}
    return _with_counts(slot, rng, dims, trials, lo, hi, max_elements, False)


def _with_counts(slot: SlotSpec, rng: random.Random, dims: dict[str, int], trials: int, lo: int, hi: int | None,
                 max_elements: int | None, highest: bool) -> tuple[dict[str, int], tuple[int, ...]]:
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


def corner_shapes(slot: SlotSpec, rng: random.Random, trials: int, lo: int, hi: int | None,
                  max_elements: int | None) -> list[tuple[dict[str, int], tuple[int, ...]]]:
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


def make_cases(slot: SlotSpec, op: Op, dtypes: list[str], device: str, rng: random.Random, trials: int,
               max_shapes: int | None, cpu_max_elements: int | None = None) -> list[Case]:
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
            cases.append(Case(len(cases), dtype, dims, counts, _pads(slot, trials, rng, padded), drawn=public is None,
                              public=public, input_pads=_pads(slot, trials, rng, rng.random() < 0.5)))
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


def poison(dtype: str, n: int, gen: torch.Generator) -> torch.Tensor:
    """A flat buffer of a drawn poison family: random-payload NaNs (never the payload arithmetic makes), finite
    values at a random scale that look like a previous call's results, or zeros."""
    family = int(torch.multinomial(torch.tensor(POISON_ODDS, dtype=torch.float), 1, generator=gen))
    target = DTYPES[dtype]
    if family == 1:
        scale = 10.0 ** float(torch.empty(()).uniform_(-3, 3, generator=gen))
        return (torch.randn(n, generator=gen) * scale).clamp(-6e4, 6e4).to(target)
    if family == 2:
        return torch.zeros(n, dtype=target)
    width, quiet = QUIET_NAN[dtype]
    bits = target.itemsize * 8
    payload = torch.randint(1, 1 << width, (n,), generator=gen, dtype=torch.int64)
    payload = torch.where(payload == quiet, payload | 1, payload)
    sign = torch.randint(0, 2, (n,), generator=gen, dtype=torch.int64) << (bits - 1)
    raw = sign | (((1 << (bits - 1 - width)) - 1) << width) | payload
    raw = torch.where(raw >= 1 << (bits - 1), raw - (1 << bits), raw)
    return raw.to(torch.int16 if bits == 16 else torch.int32).view(target)


def padded_stride(shape: tuple[int, ...], pad: int) -> tuple[int, ...]:
    """Row-major strides whose rows are `pad` elements longer than the last dim."""
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * (shape[i + 1] + (pad if i == len(shape) - 2 else 0))
    return tuple(stride)


def row_padded_stride(shape: tuple[int, ...], pad: int) -> tuple[int, ...]:
    """Row-major strides whose leading dim steps `pad` elements past the rest: a view of the first columns of a wider
    tensor, as the engine's q sliced out of its fused qkv is."""
    stride = list(padded_stride(shape, 0))
    if len(shape) >= 2:
        stride[0] += pad
    return tuple(stride)


def _stale(t: torch.Tensor, stride: tuple[int, ...], capacity: int, gen: torch.Generator) -> torch.Tensor:
    """An input's buffer: the view's values at `stride`, stale-looking values around them up to the capacity (as a
    reused engine buffer holds), integers zero-filled."""
    flat = torch.zeros(capacity, dtype=t.dtype)
    if t.is_floating_point() and capacity > t.numel():
        flat[:] = torch.randn(capacity, generator=gen).to(t.dtype)
    flat.as_strided(tuple(t.shape), stride).copy_(t)
    return flat


def _case_seed(case: Case) -> int:
    """One seed per case from its secret token counts: the same for every trial, capture and replay of the case."""
    return zlib.crc32(repr((case.counts, sorted(case.dims.items()))).encode())


def prepare(slot: SlotSpec, case: Case, trial: int, seed: int, expect: bool = True) -> Prepared:
    """Fresh inputs in buffers sized for the case's largest count (so storage repeats), poisoned outputs, reference
    (unless `expect` is False: a collective's reference needs every rank's inputs)."""
    dims = {**case.dims, slot.count_dim: case.counts[trial]}
    cap = {**case.dims, slot.count_dim: max(case.counts)}
    dtype = DTYPES[case.dtype]
    gen = torch.Generator().manual_seed(seed)
    fresh = slot.make_inputs(dims, dtype, gen)
    drawn = slot.make_scalars(case.dims, torch.Generator().manual_seed(_case_seed(case))) if slot.make_scalars else {}
    sent, inputs, outputs, args = [], {}, {}, []
    for arg in slot.args:
        if arg.role is Role.SCALAR:
            args.append({"name": arg.name, "kind": "scalar", "value": float(drawn.get(arg.name, arg.default))})
            continue
        if arg.role is Role.GROUP:
            args.append({"name": arg.name, "kind": "group"})  # the rank passes its process group here
            continue
        args.append({"name": arg.name, "kind": "tensor"})
        adt = slot.dtype_of(arg, case.dtype)
        if arg.role is Role.INPUT:
            t = fresh[arg.name].to(adt).contiguous()
            rows = case.input_pads and len(arg.shape) >= 2 and arg.shape[0] == slot.count_dim
            cap_shape = slot.shape_of(arg, cap)
            capacity = cap_shape[0] * (math.prod(cap_shape[1:]) + (max(case.input_pads) if rows else 0))
            stride = row_padded_stride(tuple(t.shape), case.input_pads[trial] if rows else 0)
            flat = _stale(t, stride, capacity, gen)
            header = wire.TensorHeader(arg.name, wire.NAMES[adt], tuple(t.shape), stride, capacity)
            inputs[arg.name] = t
        else:
            shape = slot.shape_of(arg, dims)
            cap_shape = slot.shape_of(arg, cap)
            pad_max = max(case.pads) if len(shape) >= 2 else 0
            storage = math.prod(cap_shape[:-1]) * (cap_shape[-1] + pad_max) if shape else 1
            stride = padded_stride(shape, case.pads[trial] if len(shape) >= 2 else 0)
            flat = poison(case.dtype, storage, gen)
            header = wire.TensorHeader(arg.name, wire.NAMES[adt], shape, stride, storage)
            outputs[arg.name] = header
        sent.append((header, wire.flat_bytes(flat)))
    scalars = {a["name"]: a["value"] for a in args if a["kind"] == "scalar"}
    expected = slot.reference({**{k: v.clone() for k, v in inputs.items()}, **scalars}) if expect else {}
    meta = {"arena": case.arena, "args": args, "outputs": list(outputs), "inputs": list(inputs)}
    return Prepared(meta, sent, inputs, outputs, expected)
