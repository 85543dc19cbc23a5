"""Input families: what real hidden states and norm weights look like, drawn per call from the verifier's generator.

`randn` alone hides whole classes of wrong kernels: an rmsnorm that skips the normalisation is off only by the row's
RMS, which randn keeps near 1, and squares kept in fp16 overflow only past |x| = 256. Real activations have per-row
scales over orders of magnitude, a few outlier channels far above the rest, and rows of zeros (padding); learned
norm weights spread from near zero to tens. Torch is imported inside the functions so reading slot contracts stays
light.
"""

from __future__ import annotations

import math

SCALES = (1e-3, 1e3)
"""Per-row scale range, log-uniform."""
OUTLIER_GAIN = (10.0, 100.0)
"""Outlier channels are this many times larger than the rest of their row."""
ZERO_ROW_ODDS = 8
"""About one row in this many is all zeros."""
FP16_LIMIT = 60000.0
"""Largest magnitude an honest fp16 result may take (fp16 overflows at 65504)."""


def _uniform(gen, shape, lo: float, hi: float):
    import torch

    return lo + (hi - lo) * torch.rand(shape, generator=gen)


def activations(rows: int, cols: int, gen, *, bound: float | None = None):
    """An fp32 [rows, cols] hidden state: randn, outlier channels, log-uniform row scales, zero rows (never all of
    them), |x| <= bound."""
    import torch

    x = torch.randn((rows, cols), generator=gen)
    outliers = torch.randperm(cols, generator=gen)[: max(1, cols // 256)]
    x[:, outliers] *= _uniform(gen, (len(outliers),), *OUTLIER_GAIN)
    lo, hi = (math.log(s) for s in SCALES)
    x *= _uniform(gen, (rows, 1), lo, hi).exp()
    zero = torch.randint(0, ZERO_ROW_ODDS, (rows,), generator=gen) == 0
    zero[int(torch.randint(0, rows, (), generator=gen))] = False  # never all rows: a call must say something
    x[zero] = 0.0
    return x if bound is None else x.clamp(-bound, bound)


def norm_weight(cols: int, gen):
    """An fp32 [cols] norm weight: half the draws near 1 (fresh models), half log-normal over ~0.01..100 with a few
    negative entries (trained models)."""
    import torch

    if float(torch.rand((), generator=gen)) < 0.5:
        return 1.0 + 0.1 * torch.randn((cols,), generator=gen)
    w = (1.5 * torch.randn((cols,), generator=gen) - 0.5).exp()
    return torch.where(torch.rand((cols,), generator=gen) < 0.1, -w, w)


def bound(dtype, *, factors: int = 1) -> float | None:
    """The input bound that keeps an honest result finite in `dtype`: fp16 only, for a result that multiplies
    `factors` inputs (a product of two inputs needs the square root) or sums them."""
    import torch

    if dtype != torch.float16:
        return None
    return FP16_LIMIT ** (1.0 / factors) if factors > 1 else FP16_LIMIT


__all__ = ["SCALES", "activations", "bound", "norm_weight"]
