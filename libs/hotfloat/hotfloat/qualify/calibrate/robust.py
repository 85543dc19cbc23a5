"""The process model's robust side: no single pass may set sigma and tau.

The moment fit (`model.fit`) squares every residual, so one pass a quarter slower than its round (boot
418549's B2) doubles sigma and makes a process offset out of one process's one bad pass. Here each boot's round x
process table of log pass times is first cleaned by winsorizing: the additive fit (round + process) by Huber's
M-estimator, each pass pulled in to within `CUT` robust s.d. (MAD of the residuals) of that fit, every other pass left
as it was. The same ANOVA moment equations then run on the cleaned table; what the rule is simulated against still
resamples the raw residuals (model.Fit.resid), since far passes happen and the rule must meet them.
"""

from __future__ import annotations

import math

import numpy as np

from ..rule import MAD_TO_SD

CUT = 3.5
"""Passes are winsorized beyond 3.5 robust s.d. of their boot's residuals. Normal noise puts 1 pass in 2,000 that far
out and winsorizing it lowers the variance by under 0.1%, so clean data fit as by moments; a pass from something else
(a host hiccup) counts as 3.5 s.d. instead of its square. 2.5 would clip normal noise itself (1 pass in 80); 5 lets
through passes of 1-2% at the H200's scale of 0.3%, which the rule's median shrugs off but a mean square does not."""


def winsorize(z: np.ndarray, cut: float = CUT) -> tuple[np.ndarray, int]:
    """A [round, process] table with its far passes pulled in, and how many were. The fit is Huber's, found by its
    pseudo-observations: refit the table (round + process means), clip each residual at `cut` times the residuals'
    MAD scale, repeat until nothing moves. At that point neither the fit nor the scale answers to a far pass, so it
    cannot widen its own bound or shift its round's and process's fit and push the passes beside it out as well."""
    y = z
    for _ in range(500):
        f = y.mean(axis=1, keepdims=True) + y.mean(axis=0) - y.mean()
        bound = cut * MAD_TO_SD * float(np.median(np.abs(z - f))) or math.inf
        y, last = f + np.clip(z - f, -bound, bound), y
        if np.allclose(y, last, rtol=0.0, atol=1e-12):
            break
    return y, int(np.sum(np.abs(z - f) > bound))
