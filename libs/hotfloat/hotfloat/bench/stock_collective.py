"""The stock path of a fused collective slot: what SGLang runs when it does not fuse, its all-reduce (in place on the
group, as `tensor_model_parallel_all_reduce`) and then each stock kernel of the slot the collective is fused with."""

from __future__ import annotations

from dataclasses import replace

FUSES = {"collective.ar_residual_rmsnorm": "norm.fused_add_rmsnorm"}
"""Fused collective slot -> the slot whose stock kernels run after the all-reduce."""


def after_all_reduce(stock):
    """`stock` (a hotfloat.bench.stock.Stock) preceded by an in-place all-reduce of x on the call's group; x joins
    what it overwrites, so every timed call reduces its own copy."""
    import torch.distributed as dist

    def fn(t):
        dist.all_reduce(t["x"], group=t["group"])
        return stock.fn(t)

    overwrites = tuple(dict.fromkeys(("x", *stock.overwrites)))
    return replace(stock, name=f"all_reduce+{stock.name}", fn=fn, overwrites=overwrites)
