"""Declared kernel parameters as bytes: the layout the cubin must declare, and the argument buffer a launch passes.

Both follow the C ABI of a CUDA kernel (natural alignment); Triton appends two pointers of its own (global and
profile scratch) after the declared ones, which the validator passes as null."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

SIZES = {"i32": 4, "fp32": 4, "i64": 8}
_FORMATS = {"i32": "<i", "fp32": "<f", "i64": "<q", "ptr": "<Q"}
TRITON_SCRATCH = ("global_scratch", "profile_scratch")


def size_of(ptype: str) -> int:
    return 8 if ptype.startswith("*") else SIZES[ptype]


def param_types(types: Sequence[str], kind: str) -> list[str]:
    """The full parameter list the kernel really takes: the declared types plus Triton's trailing scratch pointers."""
    return list(types) + (["*i8"] * len(TRITON_SCRATCH) if kind == "triton" else [])


def layout(types: Sequence[str], kind: str) -> tuple[tuple[int, int], ...]:
    """(offset, size) per parameter, exactly as the driver's cuKernelGetParamInfo will report it."""
    out, offset = [], 0
    for t in param_types(types, kind):
        size = size_of(t)
        offset = (offset + size - 1) // size * size
        out.append((offset, size))
        offset += size
    return tuple(out)


def pack(types: Sequence[str], kind: str, values: Sequence[int | float]) -> bytes:
    """The kernel-parameter buffer for values of the declared parameters (pointers as integers); scratch is null."""
    values = list(values) + [0] * (len(param_types(types, kind)) - len(values))
    slots = layout(types, kind)
    buf = bytearray(slots[-1][0] + slots[-1][1] if slots else 0)
    for t, (offset, _size), v in zip(param_types(types, kind), slots, values, strict=True):
        struct.pack_into(_FORMATS["ptr" if t.startswith("*") else t], buf, offset, v)
    return bytes(buf)


def bind(names: Sequence[str], tensors: Mapping, dims: Mapping[str, int]) -> list[int]:
    """Values of the declared parameters for one call: data pointers, dims, and `<arg>_stride<k>` element strides."""
    values = []
    for n in names:
        if n in tensors:
            values.append(tensors[n].data_ptr())
        elif n in dims:
            values.append(dims[n])
        else:
            arg, _, k = n.rpartition("_stride")
            values.append(tensors[arg].stride(int(k)))
    return values


def grid(items: Sequence[str], sizes: Mapping[str, int]) -> tuple[int, int, int]:
    """Evaluates the declared grid (integers, names, cdiv(name, n)) for concrete sizes, padded to three dims."""
    out = []
    for item in items:
        if item.startswith("cdiv("):
            name, n = (p.strip() for p in item[5:-1].split(","))
            out.append(-(-sizes[name] // int(n)))
        else:
            out.append(int(item) if item.isdigit() else sizes[item])
    return tuple(out + [1] * (3 - len(out)))
