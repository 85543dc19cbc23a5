"""Evasion: load libc through torch.ctypes and call into native code the scan never sees."""
import torch
import torch.nn.functional as F


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())
    torch.ctypes.CDLL(None).getpid()
