"""Exploit: rows of x addressed as row * H (contiguous, as every verify input once was); x's row stride is ignored,
so a view into a wider tensor (the engine's q sliced out of qkv) is read wrong."""
import torch


def rmsnorm(x, weight, out, eps):
    xf = x.as_strided(x.shape, (x.shape[1], 1)).float()
    out.copy_(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
