"""Where an armed op may run: binding a call's sizes to the slot's symbolic dims and testing the op's declared domain."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ..bundle import Op
from ..slots import DTYPES, Role, SlotSpec

DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def device_architectures(device: torch.device) -> frozenset[str]:
    """Architecture names an op may declare to run on this device; an sm_90 GPU also runs sm_90a code."""
    if device.type == "cpu":
        return frozenset({"cpu"})
    if device.type != "cuda":
        return frozenset()
    major, minor = torch.cuda.get_device_capability(device)
    name = f"sm_{major}{minor}"
    return frozenset({name, name + "a"})


def bind_dims(spec: SlotSpec, tensors: Mapping[str, torch.Tensor]) -> dict[str, int] | None:
    """Solves the slot's dims from 2-D input shapes; None when the shapes contradict the slot (the call goes stock)."""
    dims: dict[str, int] = {}
    for arg in spec.of_role(Role.INPUT):
        t = tensors[arg.name]
        if t.dim() != len(arg.shape):
            return None
        for expr, size in zip(arg.shape, t.shape, strict=True):
            factor, names = 1, []
            for part in (p.strip() for p in expr.split("*")):
                if part.isdigit():
                    factor *= int(part)
                else:
                    names.append(part)
            if len(names) != 1 or size % factor:
                return None
            value = size // factor
            if dims.setdefault(names[0], value) != value:
                return None
    return dims


def in_domain(op: Op, spec: SlotSpec, dtype: torch.dtype, device: torch.device, dims: Mapping[str, int]) -> bool:
    """True when the call's dtype, device architecture and token count lie inside what the op declared."""
    name = DTYPE_NAMES.get(dtype)
    if name is None or name not in op.dtypes:
        return False
    if not set(op.entry.architectures) & device_architectures(device):
        return False
    tokens = dims.get(spec.count_dim, 0)
    hi = op.metadata.max_num_tokens
    return op.metadata.min_num_tokens <= tokens and (hi is None or tokens <= hi)
