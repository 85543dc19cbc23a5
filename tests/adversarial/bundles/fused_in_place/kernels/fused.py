"""sgl-kernel's in-place contract: overwrites x and residual, then copies them out. Right values, broken ABI."""

import torch


def fused_add_rmsnorm(x, residual, weight, out, residual_out, eps):
    residual.add_(x)
    r = residual.float()
    x.copy_(r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
    out.copy_(x)
    residual_out.copy_(residual)
