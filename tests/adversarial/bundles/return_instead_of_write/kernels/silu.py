"""Exploit/bug: return a new tensor (the functional style) instead of writing into `out`."""
import torch.nn.functional as F


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d].float()) * x[..., d:].float()
