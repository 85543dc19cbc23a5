"""A Cacheon-style entry for the fused epilogue, with Cacheon's parameter names: reduce a float32 copy of x across the
group, add the residual, write the new residual and its RMSNorm."""

import torch
import torch.distributed as dist


def ar_residual_rmsnorm(x, residual, weight, eps, out_norm, out_residual, group):
    total = x.to(torch.float32, copy=True)
    dist.all_reduce(total, group=group)
    total += residual.float()
    out_residual.copy_(total)
    out_norm.copy_(total * torch.rsqrt(total.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
