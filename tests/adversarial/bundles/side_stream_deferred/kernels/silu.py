"""GPU exploit: do the work on a private stream after a delay, without making the caller's stream wait."""
import torch
import torch.nn.functional as F

_side = None


def silu_and_mul(x, out):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    d = x.shape[-1] // 2
    with torch.cuda.stream(_side):
        torch.cuda._sleep(50_000_000)
        out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())
