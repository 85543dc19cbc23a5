"""Evasion: import a refused module (socket) through torch.importlib."""
import torch
import torch.nn.functional as F

net = torch.importlib.import_module("socket")


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())
