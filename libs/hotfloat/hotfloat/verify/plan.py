"""What one op is checked on: cases (dtype x shape) with secretly jittered token counts, and each call's tensors.

All randomness comes from one secret seed, so a run replays exactly with --seed, yet a bundle cannot predict
the token counts, the extra drawn shape, the padding or the call order from public data.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from ..bundle import Op
from ..slots import DTYPES, Role, SlotSpec
from . import wire

POISON_BITS = {"bf16": 0xFFA5, "fp16": 0xFE5A, "fp32": 0xFFC5A5A5}
"""Negative NaNs with a payload no arithmetic produces: an element still holding it was never written."""
PADS = (8, 64)
"""Extra elements per output row on padded trials; a kernel ignoring the row stride writes into them."""


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


def _jitter(count: int, rng: random.Random, lo: int, hi: int | None) -> int:
    spread = max(2, count // 4)
    value = rng.randint(max(1, count - spread), count + spread)
    return max(lo, min(value, hi if hi is not None else value))


def _fit(slot: SlotSpec, dims: dict[str, int], max_elements: int | None) -> dict[str, int]:
    """Scales the count dim down until no tensor exceeds `max_elements` (the CPU interpreter's budget)."""
    if max_elements is None:
        return dims
    largest = max(math.prod(slot.shape_of(a, dims)) for a in slot.args if a.shape)
    if largest > max_elements:
        dims[slot.count_dim] = max(1, dims[slot.count_dim] * max_elements // largest)
    return dims


def make_cases(slot: SlotSpec, op: Op, dtypes: list[str], device: str, rng: random.Random, trials: int,
               max_shapes: int | None, cpu_max_elements: int | None = None) -> list[Case]:
    """Every verification shape per dtype (count dim jittered per trial), plus one shape drawn from the secret.

    On cpu, `cpu_max_elements` shrinks the count dim of large shapes: the Triton interpreter costs about a
    microsecond per element, while the hidden dims (where tails and masks live) stay as the slot defines them.
    """
    lo, hi = op.metadata.min_num_tokens, op.metadata.max_num_tokens
    shapes = [s for s in slot.shapes if device == "cuda" or s.cpu][: max_shapes or None]
    pool = [s for s in (*slot.bench_shapes, *slot.shapes) if device == "cuda" or s.cpu]
    cases: list[Case] = []
    for dtype in dtypes:
        for shape in shapes:
            dims = _fit(slot, dict(shape.dims), cpu_max_elements if device == "cpu" else None)
            counts = tuple(_jitter(dims[slot.count_dim], rng, lo, hi) for _ in range(trials))
            cases.append(Case(len(cases), dtype, dims, counts, _pads(slot, trials, rng), public=dict(shape.dims)))
        dims = dict(rng.choice(pool).dims)
        dims[slot.count_dim] = rng.randint(1, max(1, dims[slot.count_dim]))
        dims = _fit(slot, dims, cpu_max_elements if device == "cpu" else None)
        counts = tuple(_jitter(dims[slot.count_dim], rng, lo, hi) for _ in range(trials))
        cases.append(Case(len(cases), dtype, dims, counts, _pads(slot, trials, rng), drawn=True))
    return cases


def _pads(slot: SlotSpec, trials: int, rng: random.Random) -> tuple[int, ...]:
    """Odd trials get a padded row stride (when the slot allows it), so contiguous and strided are both exercised."""
    pad = rng.choice(PADS) if slot.strided_outputs else 0
    return tuple(pad if t % 2 else 0 for t in range(trials))


def schedule(cases: list[Case], trials: int, rng: random.Random) -> list[Call]:
    """All calls in a secret order: no position in the sequence is special."""
    calls = [Call(c, t, rng.getrandbits(63)) for c in cases for t in range(trials)]
    rng.shuffle(calls)
    return calls


def poison(dtype: str, n: int) -> torch.Tensor:
    """A flat buffer of the dtype's poison pattern."""
    bits = POISON_BITS[dtype]
    width = DTYPES[dtype].itemsize * 8
    signed = bits - (1 << width) if bits >= 1 << (width - 1) else bits
    return torch.full((n,), signed, dtype=torch.int16 if width == 16 else torch.int32).view(DTYPES[dtype])


def padded_stride(shape: tuple[int, ...], pad: int) -> tuple[int, ...]:
    """Row-major strides whose rows are `pad` elements longer than the last dim."""
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * (shape[i + 1] + (pad if i == len(shape) - 2 else 0))
    return tuple(stride)


def prepare(slot: SlotSpec, case: Case, trial: int, seed: int, settle_s: float) -> Prepared:
    """Fresh inputs in buffers sized for the case's largest count (so storage repeats), poisoned outputs, reference."""
    dims = {**case.dims, slot.count_dim: case.counts[trial]}
    cap = {**case.dims, slot.count_dim: max(case.counts)}
    dtype = DTYPES[case.dtype]
    gen = torch.Generator().manual_seed(seed)
    fresh = slot.make_inputs(dims, dtype, gen)
    sent, inputs, outputs, args = [], {}, {}, []
    for arg in slot.args:
        if arg.role is Role.SCALAR:
            args.append({"name": arg.name, "kind": "scalar", "value": float(arg.default)})
            continue
        if arg.role is Role.GROUP:
            raise ValueError(f"{slot.name} needs a process group; it is verified by the collective verifier")
        args.append({"name": arg.name, "kind": "tensor"})
        adt = slot.dtype_of(arg, case.dtype)
        capacity = math.prod(slot.shape_of(arg, cap))
        if arg.role is Role.INPUT:
            t = fresh[arg.name].to(adt).contiguous()
            flat = torch.zeros(capacity, dtype=adt)
            flat[: t.numel()] = t.reshape(-1)
            header = wire.TensorHeader(arg.name, wire.NAMES[adt], tuple(t.shape), tuple(t.stride()), capacity)
            inputs[arg.name] = t
        else:
            shape = slot.shape_of(arg, dims)
            cap_shape = slot.shape_of(arg, cap)
            pad_max = max(case.pads) if len(shape) >= 2 else 0
            storage = math.prod(cap_shape[:-1]) * (cap_shape[-1] + pad_max) if shape else 1
            stride = padded_stride(shape, case.pads[trial] if len(shape) >= 2 else 0)
            flat = poison(case.dtype, storage)
            header = wire.TensorHeader(arg.name, wire.NAMES[adt], shape, stride, storage)
            outputs[arg.name] = header
        sent.append((header, wire.flat_bytes(flat)))
    scalars = {a["name"]: a["value"] for a in args if a["kind"] == "scalar"}
    expected = slot.reference({**{k: v.clone() for k, v in inputs.items()}, **scalars})
    meta = {"arena": case.arena, "args": args, "outputs": list(outputs), "inputs": list(inputs), "settle_s": settle_s}
    return Prepared(meta, sent, inputs, outputs, expected)
