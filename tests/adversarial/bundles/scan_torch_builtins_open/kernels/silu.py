"""Evasion: open() is refused as a name, but torch.builtins.open is the same function."""
import torch
import torch.nn.functional as F


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())
    with torch.builtins.open("/etc/hostname") as f:
        f.read()
