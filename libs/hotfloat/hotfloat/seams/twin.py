"""The twin's nudge: a router built as a twin of a candidate (`twin_of`) never imports the candidate's code, it reads
only the manifest. Every call inside the candidate's declared domains is a nudge site, but a slot's nudge acts only
once the validator enabled that slot (`set_twin_slots`, default none: the slots the candidate really routed). An
enabled nudge rounds the output stochastically to a neighbouring representable value, the size of what an accurate
kernel legitimately differs by: each finite non-zero element moves one unit in the last place up or down in magnitude
(50/50) with probability 1/4 (an accurate kernel picks the other neighbour of the exact value with probability |exact
- stock| / ulp, 1/4 on average), decided by a fixed-seed hash of the element's bits and index (no RNG state, so
replays are deterministic); zero, inf and NaN stay, and `residual_out` stays (an accurate fused kernel rounds the sum
exactly as stock does). The enable flag is a device tensor read by elementwise ops, so a nudge captured in a CUDA
graph at warm-up follows the flag when replayed. The hash runs over at most `CHUNK` elements at a time: its int64
temporaries are four times the output's bytes each, and on a prefill of thousands of tokens they made the twin hold
6.6 GB more than B on the H100 (25.0 of its 25.7 GiB share), where the caching allocator keeps its peak. That engine's
numerics differ from the baseline's by a known,
legitimate amount, which is what qualification's correctness gate measures a candidate against.
"""

from __future__ import annotations

import torch

CHUNK = 1 << 22
"""Elements hashed at once: 32 MiB per int64 temporary, and a decode step's outputs in one piece."""
EXACT_OUTPUTS = {"residual_out"}
"""Outputs the twin never nudges: an accurate kernel computes them bit for bit as stock does."""


def stochastic_ulp(t: torch.Tensor, flag: torch.Tensor, chunk: int = CHUNK) -> torch.Tensor:
    """Where `flag` is set, a quarter of the finite non-zero elements one ulp up or down in magnitude (50/50), by a
    fixed-seed hash of each element's bits and index; elementwise, so CUDA graphs capture it with the call."""
    flat = t.reshape(-1)
    out = torch.empty(flat.shape, dtype=t.dtype, device=t.device)
    for start in range(0, flat.numel(), chunk):
        part = flat[start : start + chunk]
        out[start : start + chunk] = _nudged(part, flag, start)
    return out.view(t.shape)


def _nudged(t: torch.Tensor, flag: torch.Tensor, start: int) -> torch.Tensor:
    """The nudge of a contiguous piece of the flattened output whose first element has index `start`."""
    ints = {2: torch.int16, 4: torch.int32}[t.element_size()]
    bits = t.view(ints)
    index = torch.arange(start, start + t.numel(), device=t.device)
    h = (((bits.long() & 0xFFFFFFFF) ^ (index << 1)) * 0x2545F491 + 0x1F3D5B79) & 0x7FFFFFFF
    h = ((h ^ (h >> 15)) * 0x5BD1E995) & 0x7FFFFFFF
    r = (h ^ (h >> 13)) & 7  # 0: up, 1: down, else stays
    moved = (bits + (r == 0).to(ints) - (r == 1).to(ints)).view(t.dtype)
    return torch.where(flag & torch.isfinite(t) & (t != 0) & torch.isfinite(moved), moved, t)
