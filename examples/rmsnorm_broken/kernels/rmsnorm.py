"""A broken RMSNorm: it forgets the weight multiply. Close enough to look plausible, wrong enough to FAIL."""

import torch


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float) -> None:
    """x * rsqrt(mean(x^2) + eps), missing `* weight` on purpose."""
    xf = x.float()
    out.copy_(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps))
