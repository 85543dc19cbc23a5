"""Evasion: operator.attrgetter resolves a dotted string, so `torch.os.system` never appears as an attribute."""
import operator

import torch
import torch.nn.functional as F

reach = operator.attrgetter("os.getpid")


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())
    reach(torch)()
