"""The stock kernels the engine runs today for each slot, timed beside the candidate in the same run.

torch-eager is SGLang's `forward_native` path; flashinfer and sgl_kernel are its CUDA path and join the run when
they import (carried to the device as wheels where they fit). Each returns its output, as the engine uses it."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F

Stock = Callable[[Mapping[str, object]], torch.Tensor]


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
}
LIBRARIES = ("sgl_kernel", "flashinfer")


def stock_kernels(slot: str, device: str) -> list[tuple[str, Stock]]:
    """Every stock kernel that can run the slot on this device, torch first."""
    found = list(BUILTIN.get(slot, ()))
    if device == "cuda" and slot in BUILTIN:
        for lib in LIBRARIES:
            fn = _optional(lib, slot)
            if fn is not None:
                found.append((lib, fn))
    return found
