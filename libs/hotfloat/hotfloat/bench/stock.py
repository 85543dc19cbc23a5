"""The stock kernels the engine runs today for each slot, timed beside the candidate in the same run.

torch-eager is SGLang's `forward_native` path. The libraries SGLang's CUDA path calls (sgl-kernel, FlashInfer) share
one calling convention: `silu_and_mul(x)` and `rmsnorm(x, weight, eps)` return their output, `fused_add_rmsnorm(x,
residual, weight, eps)` overwrites x with the normalised sum and residual with the sum. A library joins the run when
it imports here; FlashInfer builds its kernels on the first call (JIT, nvcc), so that first call is the harness's
probe. The library is called with its own defaults, as SGLang calls it (PDL on Hopper)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

LIBRARIES = ("sgl_kernel", "flashinfer")
"""Modules following the sgl-kernel / FlashInfer calling convention that a CUDA bench adds when they load."""
FUNCTIONS = {"activation.silu_and_mul": ("silu_and_mul", "activation"), "norm.rmsnorm": ("rmsnorm", "norm"),
             "norm.fused_add_rmsnorm": ("fused_add_rmsnorm", "norm")}
"""Slot -> (function name, submodule that holds it when the package's top level does not export it)."""


@dataclass(frozen=True)
class Stock:
    """One stock implementation of a slot. `fn` returns the slot's outputs in ABI order. A kernel that writes over
    some of its inputs names them in `overwrites`: the harness then gives every call its own copies, refilled from the
    pristine input set before the call and outside its timed region."""

    name: str
    fn: Callable[[Mapping[str, object]], "torch.Tensor | tuple[torch.Tensor, ...]"]
    overwrites: tuple[str, ...] = ()
    probe: bool = False
    """True for a library kernel: its first call may build it, and a failure there skips it with the reason."""


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


BUILTIN: dict[str, tuple[Stock, ...]] = {
    "activation.silu_and_mul": (Stock("torch-eager", _silu_eager),),
    "norm.rmsnorm": (Stock("torch-eager", _rmsnorm_eager), Stock("torch.rms_norm", _rmsnorm_torch)),
    "norm.fused_add_rmsnorm": (Stock("torch-eager", _fused_eager), Stock("torch add+rms_norm", _fused_torch)),
}


def library(module: str, slot: str) -> Stock | str:
    """The module's kernel for the slot as a Stock, or the reason it cannot run here."""
    if importlib.util.find_spec(module) is None:
        return "not installed"
    name, sub = FUNCTIONS[slot]
    try:
        lib = importlib.import_module(module)
        fn = getattr(lib, name, None) or getattr(importlib.import_module(f"{module}.{sub}"), name)
    except Exception as e:  # a library that cannot load on this host (no libcuda, ABI mismatch) is skipped
        return f"import failed: {type(e).__name__}: {e}"[:300]
    if slot == "activation.silu_and_mul":
        return Stock(module, lambda t: fn(t["x"]), probe=True)
    if slot == "norm.rmsnorm":
        return Stock(module, lambda t: fn(t["x"], t["weight"], t["eps"]), probe=True)

    def fused(t):
        fn(t["x"], t["residual"], t["weight"], t["eps"])
        return t["x"], t["residual"]

    return Stock(module, fused, overwrites=("x", "residual"), probe=True)


def stock_kernels(slot: str, libraries: tuple[str, ...]) -> tuple[list[Stock], dict[str, str]]:
    """Every stock kernel that can run the slot here, torch first, and why each named library cannot (libraries
    have no kernel for slots outside FUNCTIONS; those are not reported)."""
    found, skipped = list(BUILTIN.get(slot, ())), {}
    if slot not in FUNCTIONS:
        return found, skipped
    for module in libraries:
        s = library(module, slot)
        if isinstance(s, Stock):
            found.append(s)
        else:
            skipped[module] = s
    return found, skipped
