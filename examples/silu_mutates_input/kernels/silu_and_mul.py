"""A SwiGLU gate that computes the right answer but uses its input as scratch space (writes silu(gate) into x).

The engine reuses `x` after the call, so this corrupts the model; verify must FAIL it as an input mutation.
"""

import torch.nn.functional as F


def silu_and_mul(x, out) -> None:
    """Right output, wrong manners: the gate half of x is overwritten in place."""
    d = x.shape[-1] // 2
    gate = x[..., :d]
    gate.copy_(F.silu(gate.float()))
    out.copy_(gate.float() * x[..., d:].float())
