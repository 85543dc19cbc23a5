"""Each call's tensors: fresh inputs in reused, stale-looking buffers, poisoned (possibly padded) outputs, and the
trusted reference computed in this process.

Every value comes from the call's seed (drawn from the run's secret by `plan.schedule`), so a run replays exactly.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import torch

from ..slots import DTYPES, Role, SlotSpec
from . import wire
from .plan import Case

POISON_ODDS = (3, 2, 1)
"""Relative odds of a call's output poison: NaNs with random payloads, stale-looking finite values, zeros. Serving
outputs hold stale memory, so no poison family alone may mark a call as judged."""
QUIET_NAN = {"bf16": (7, 0x40), "fp16": (10, 0x200), "fp32": (23, 0x400000)}
"""Mantissa width and the payload arithmetic produces (the canonical quiet NaN), never used as poison."""


@dataclass
class Prepared:
    """A call's tensors: what is sent to the child, and what the parent keeps to judge the reply."""

    meta: dict
    sent: list[tuple[wire.TensorHeader, bytes]]
    inputs: dict[str, torch.Tensor]
    outputs: dict[str, wire.TensorHeader]
    expected: dict[str, torch.Tensor]
    scales: dict[str, torch.Tensor] = field(default_factory=dict)
    """Per output, the magnitude its rtol applies to (`SlotSpec.expect`)."""


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
            header = wire.TensorHeader(arg.name, wire.dtype_name(adt), tuple(t.shape), stride, capacity)
            inputs[arg.name] = t
        else:
            shape = slot.shape_of(arg, dims)
            cap_shape = slot.shape_of(arg, cap)
            pad_max = max(case.pads) if len(shape) >= 2 else 0
            storage = math.prod(cap_shape[:-1]) * (cap_shape[-1] + pad_max) if shape else 1
            stride = padded_stride(shape, case.pads[trial] if len(shape) >= 2 else 0)
            flat = poison(case.dtype, storage, gen)
            header = wire.TensorHeader(arg.name, wire.dtype_name(adt), shape, stride, storage)
            outputs[arg.name] = header
        sent.append((header, wire.flat_bytes(flat)))
    scalars = {a["name"]: a["value"] for a in args if a["kind"] == "scalar"}
    expected, scales = slot.expect({**{k: v.clone() for k, v in inputs.items()}, **scalars}) if expect else ({}, {})
    meta = {"arena": case.arena, "args": args, "outputs": list(outputs), "inputs": list(inputs)}
    return Prepared(meta, sent, inputs, outputs, expected, scales)
