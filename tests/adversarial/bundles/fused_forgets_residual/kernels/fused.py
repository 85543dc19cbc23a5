"""Normalises x + residual correctly but never writes residual_out: the engine's next layer would add onto garbage."""

import torch


def fused_add_rmsnorm(x, residual, weight, out, residual_out, eps):
    s = x.float() + residual.float()
    out.copy_(s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
