"""The row-wise slots' seams: SGLang's SiluAndMul and RMSNorm forward methods, and when a call there is the plain
slot (else it stays stock). Both are hooked in every engine: cheap, and every call is counted.

Each wrapper receives SGLang's original method; calls it makes while running stock code (RMSNorm.forward_cuda falls
back to forward_native, for instance) go straight to the original so one layer call is counted once.
"""

from __future__ import annotations

import threading

from hotfloat.seams import SeamRouter

from ..seam import Seam, callable_check

_inside = threading.local()

_ACT = "sglang.srt.layers.activation.SiluAndMul"
_NORM = "sglang.srt.layers.layernorm.RMSNorm"
SILU_TARGETS = (f"{_ACT}.forward_cuda", f"{_ACT}.forward_native")
NORM_TARGETS = (f"{_NORM}.forward_cuda", f"{_NORM}.forward_native")
_NORM_PARAMS = ["self", "x", "residual", "post_residual_addition"]


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


SEAMS = (
    Seam(
        slots=("activation.silu_and_mul",),
        targets=SILU_TARGETS,
        hook=silu_hook,
        always=True,
        checks=tuple(
            callable_check(t.removeprefix("sglang.srt.layers.activation."), t, ["self", "x"]) for t in SILU_TARGETS
        ),
    ),
    Seam(
        slots=("norm.rmsnorm", "norm.fused_add_rmsnorm"),
        targets=NORM_TARGETS,
        hook=norm_hook,
        always=True,
        checks=(
            *(callable_check(t.removeprefix("sglang.srt.layers.layernorm."), t, _NORM_PARAMS) for t in NORM_TARGETS),
            callable_check(  # what `_plain_layer` reads off the layer
                "RMSNorm.__init__",
                f"{_NORM}.__init__",
                "hidden_size eps var_hidden_size cast_x_before_out_mul fp32_residual has_weight override_orig_dtype".split(),
                order=False,
            ),
        ),
    ),
)
