"""A plain-torch SwiGLU gate written for Cacheon's write-into-output ABI (the same ABI hotfloat uses)."""

import torch


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float())


def setup(engine):
    """Cacheon's framework-mode hook; hotfloat never calls it."""
    return engine
