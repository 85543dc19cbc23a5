"""Exploit/bug: assume a contiguous output and write through a flat view (corrupts neighbouring rows in the engine)."""
import torch
import torch.nn.functional as F


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    y = (F.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype).reshape(-1)
    flat = torch.as_strided(out, (y.numel(),), (1,))
    flat.copy_(y)
