"""The SGLang methods hotfloat routes, and when a call there is the plain slot (else it stays stock).

Each wrapper receives SGLang's original method; calls it makes while running stock code (RMSNorm.forward_cuda falls
back to forward_native, for instance) go straight to the original so one layer call is counted once.
"""

from __future__ import annotations

import threading

from hotfloat.seams import SeamRouter

_inside = threading.local()

SILU_TARGETS = (
    "sglang.srt.layers.activation.SiluAndMul.forward_cuda",
    "sglang.srt.layers.activation.SiluAndMul.forward_native",
)
NORM_TARGETS = (
    "sglang.srt.layers.layernorm.RMSNorm.forward_cuda",
    "sglang.srt.layers.layernorm.RMSNorm.forward_native",
)


def _stock(original, *args, **kwargs):
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        return original(*args, **kwargs)
    finally:
        _inside.depth -= 1


def silu_hook(router: SeamRouter):
    """An AROUND hook for SiluAndMul's forward methods."""

    def around(original, layer, x, *args, **kwargs):
        if getattr(_inside, "depth", 0) or args or kwargs:
            return original(layer, x, *args, **kwargs)
        return router.silu_and_mul(x, stock=lambda x: _stock(original, layer, x))

    return around


def _plain_layer(layer, post_residual_addition) -> bool:
    """No post-residual addition, partial variance, HF casting or fp32 residual stream: the layer computes the
    slots' math."""
    return (
        post_residual_addition is None
        and layer.variance_size_override is None
        and not layer.cast_x_before_out_mul
        and layer.override_orig_dtype is None
        and layer.has_weight
        and not layer.fp32_residual
    )


def norm_hook(router: SeamRouter):
    """An AROUND hook for RMSNorm's forward methods: a plain call is norm.rmsnorm, one with a residual is
    norm.fused_add_rmsnorm (its two outputs are fresh tensors; SGLang's callers use the pair forward returns)."""

    def around(original, layer, x, residual=None, post_residual_addition=None):
        args = (residual, post_residual_addition)
        if getattr(_inside, "depth", 0):
            return original(layer, x, *args)
        slot = "norm.rmsnorm" if residual is None else "norm.fused_add_rmsnorm"
        if not _plain_layer(layer, post_residual_addition):
            router.count_stock(slot)
            return _stock(original, layer, x, *args)
        if residual is None:
            return router.rmsnorm(
                x, layer.weight.data, layer.variance_epsilon, stock=lambda x, w, eps: _stock(original, layer, x, *args)
            )
        return router.fused_add_rmsnorm(
            x,
            residual,
            layer.weight.data,
            layer.variance_epsilon,
            stock=lambda x, r, w, eps: _stock(original, layer, x, r, *args[1:]),
        )

    return around
