"""The stock kernels the engine runs today for each slot, timed beside the candidate in the same run.

torch-eager is SGLang's `forward_native` path; flashinfer and sgl_kernel are its CUDA path and join the run when
they import (carried to the device as wheels where they fit). Each returns its outputs, as the engine uses them."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F

Stock = Callable[[Mapping[str, object]], "torch.Tensor | tuple[torch.Tensor, ...]"]
"""Returns the slot's outputs in ABI order: one tensor, or a tuple when the slot has several."""


def _silu_eager(t):
    x = t["x"]
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def _rmsnorm_eager(t):
    x = t["x"]
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + t["eps"])
    return (x32 * t["weight"].float()).to(x.dtype)


def _rmsnorm_torch(t):
    x = t["x"]
    return F.rms_norm(x, (x.shape[-1],), t["weight"], t["eps"])


def _fused_eager(t):
    """SGLang's forward_native with a residual: sum in fp32, round the new residual, normalise the fp32 sum."""
    x = t["x"]
    s = x.float() + t["residual"].float()
    out = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + t["eps"])
    return (out * t["weight"].float()).to(x.dtype), s.to(x.dtype)


def _fused_torch(t):
    """The shortest unfused torch: add in the op dtype, then torch's own fused rms_norm."""
    x = t["x"]
    residual = x + t["residual"]
    return F.rms_norm(residual, (x.shape[-1],), t["weight"], t["eps"]), residual


def _optional(module: str, slot: str) -> Stock | None:
    """A library kernel for the slot, or None when the library is not installed or fails to load here."""
    if importlib.util.find_spec(module) is None:
        return None
    try:
        lib = importlib.import_module(module)
    except Exception:  # a library that cannot load on this host (no libcuda, ABI mismatch) is simply absent
        return None
    if slot == "activation.silu_and_mul":
        fn = getattr(lib, "silu_and_mul", None) or importlib.import_module(f"{module}.activation").silu_and_mul
        return lambda t: fn(t["x"])
    fn = getattr(lib, "rmsnorm", None) or importlib.import_module(f"{module}.norm").rmsnorm
    return lambda t: fn(t["x"], t["weight"], t["eps"])


BUILTIN: dict[str, tuple[tuple[str, Stock], ...]] = {
    "activation.silu_and_mul": (("torch-eager", _silu_eager),),
    "norm.rmsnorm": (("torch-eager", _rmsnorm_eager), ("torch.rms_norm", _rmsnorm_torch)),
    "norm.fused_add_rmsnorm": (("torch-eager", _fused_eager), ("torch add+rms_norm", _fused_torch)),
}
LIBRARIES = ("sgl_kernel", "flashinfer")
LIBRARY_SLOTS = ("activation.silu_and_mul", "norm.rmsnorm")
"""Slots whose library kernels return their outputs. The libraries' fused_add_rmsnorm overwrites x and residual in
place, so on the bench's reused input sets it would compute on its own previous results and fail every check;
timing it on fresh copies would add two copies the engine does not run."""


def stock_kernels(slot: str, device: str) -> list[tuple[str, Stock]]:
    """Every stock kernel that can run the slot on this device, torch first."""
    found = list(BUILTIN.get(slot, ()))
    if device == "cuda" and slot in LIBRARY_SLOTS:
        for lib in LIBRARIES:
            fn = _optional(lib, slot)
            if fn is not None:
                found.append((lib, fn))
    return found
