"""A broken SwiGLU gate: it uses sigmoid where silu belongs (a classic slip), so verify must FAIL it on tolerance."""

import torch


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    """Wrong math on purpose: sigmoid(gate) * up instead of gate * sigmoid(gate) * up."""
    d = x.shape[-1] // 2
    out.copy_(torch.sigmoid(x[..., :d].float()) * x[..., d:].float())
