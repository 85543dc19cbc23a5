"""Writes residual_out = x + residual, then normalises the stale residual it was given instead of the new sum."""

import torch


def fused_add_rmsnorm(x, residual, weight, out, residual_out, eps):
    residual_out.copy_(x.float() + residual.float())
    r = residual.float()
    out.copy_(r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
