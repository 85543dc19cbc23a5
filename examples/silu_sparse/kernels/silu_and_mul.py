"""A SwiGLU gate with a tail bug: it processes whole 16-token tiles only, so the last T % 16 rows are never written.

Correct whenever the token count is a multiple of 16; verify's jittered counts and poisoned outputs catch it.
"""

import torch.nn.functional as F

TILE = 16


def silu_and_mul(x, out) -> None:
    """Writes the rows of complete tiles only, like a launch grid of T // TILE programs without a tail."""
    d = x.shape[-1] // 2
    rows = x.shape[0] // TILE * TILE
    out[:rows].copy_(F.silu(x[:rows, :d].float()) * x[:rows, d:].float())
