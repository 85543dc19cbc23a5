"""The process model of the stock engines' log pass times, and the rule simulated under it (secondary figures).

Round effect + persistent process offset (s.d. tau) + per-pass noise (s.d. sigma), fitted by the method of moments on
each boot's two-way round x process layout (ANOVA mean squares pooled over boots), and again on the layouts with each
far pass winsorized (`robust`: one pass must not set it). A model, reported beside the counts of
independent units (`analyse`), never for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .files import CalibrationRaw, ProcessModel, RobustModel
from .noise import series
from .robust import winsorize
from ..records import RuleConfig
from ..rule import decide

Z95 = 1.6449
"""One-sided 95% normal quantile (tau's upper bound, through the Wilson-Hilferty chi-square approximation)."""
ANOVA = (
    "two-way round x process ANOVA of the stock engines' log pass times per boot, mean squares pooled over boots; "
    "tau's bound by the chi-square (Wilson-Hilferty) quantile"
)


@dataclass(frozen=True)
class Fit:
    """The hierarchical model fitted to the stock engines' log pass times."""

    sigma: float
    tau: float
    """The moment estimate of the process offsets' s.d., truncated at 0."""
    tau_upper: float
    resid: np.ndarray
    """The residuals, scaled up for the fit's degrees of freedom, for resampling. The robust fit's are its raw ones,
    far passes as they were: those are part of what the rule meets; only sigma and tau are estimated without them."""
    processes: int
    passes: int
    cut: float | None = None
    """The robust fit's bound in robust s.d. (None: the moment fit)."""
    winsorized: int = 0


def fit(raws: list[CalibrationRaw], cut: float | None = None) -> Fit:
    """The hierarchical model on the stock engines' log pass times: sigma, tau and tau's upper 95% bound. Per boot, the
    round means are removed (they cancel in the rule's ratios) and E[SS between processes] = (J - 1)(sigma^2 +
    R tau^2) against the residual mean square sigma^2. With `cut`, the robust fit: the same equations on each boot's
    table winsorized at `cut` robust s.d. (`robust.winsorize`)."""
    sse = dfe = ssg = dfg = w = 0.0
    resid, procs, passes, pulled = [], 0, 0, 0
    for raw in (r for r in raws if len(r.stock) > 1):
        logs = np.log(series(raw, raw.stock))
        z, n = winsorize(logs, cut) if cut else (logs, 0)
        off, pulled = logs - z, pulled + n  # what winsorizing took off each pass, put back into the resampled residuals
        z = z - z.mean(axis=1, keepdims=True)
        n_r, n_j = z.shape
        m = z.mean(axis=0)
        e = z - m
        sse, dfe, ssg, dfg = sse + (e**2).sum(), dfe + (n_r - 1) * (n_j - 1), ssg + n_r * (m**2).sum(), dfg + n_j - 1
        w, procs, passes = w + (n_j - 1) * n_r, procs + n_j, passes + n_r * n_j
        resid.append((e + off).ravel() * math.sqrt(n_r * n_j / ((n_r - 1) * (n_j - 1))))
    s2 = sse / dfe
    q = dfg * (1 - 2 / (9 * dfg) - Z95 * math.sqrt(2 / (9 * dfg))) ** 3  # 5% quantile of chi-square(dfg)
    tau, upper = (math.sqrt(max(0.0, v)) for v in ((ssg - dfg * s2) / w, (ssg / q - s2) * dfg / w))
    return Fit(math.sqrt(s2), tau, upper, np.concatenate(resid), procs, passes, cut, pulled)


def simulate(resid: np.ndarray, tau: float, rule: RuleConfig, effect: float, sims: int, rng) -> float:
    """The rule's PASS rate on simulated qualifications: three process offsets drawn at tau, per-pass noise
    resampled from the fitted residuals, C faster by `effect`."""
    passes = 0
    for _ in range(sims):
        x = np.exp(rng.normal(0.0, tau, 3) + rng.choice(resid, size=(rule.max_rounds, 3)))
        lk = decide(x[:, 0], x[:, 1] * (1 - effect), x[:, 2], rule)
        passes += lk is not None and lk.status == "PASS"
    return passes / sims if sims else float("nan")


def process_model(f: Fit, rule: RuleConfig, sims: int, seed: int) -> ProcessModel:
    """A fit and the rule simulated under it; each fit starts its own generator at `seed`, so the moment and robust
    models meet the same random stream and differ by their fits alone."""
    rng = np.random.default_rng(seed)
    common = dict(
        processes=f.processes,
        passes=f.passes,
        sigma=f.sigma,
        tau=f.tau,
        tau_upper_95=f.tau_upper,
        sims=sims,
        false_pass=simulate(f.resid, f.tau, rule, 0.0, sims, rng),
        false_pass_at_tau_upper=simulate(f.resid, f.tau_upper, rule, 0.0, sims, rng),
        power_at_2pct=simulate(f.resid, f.tau_upper, rule, 0.02, sims, rng),
    )
    if f.cut is None:
        return ProcessModel(method=f"method of moments: {ANOVA}", **common)
    return RobustModel(
        method=f"method of moments on each boot's table winsorized at {f.cut:g} robust s.d. (Huber "
        f"fit, MAD scale; raw residuals resampled): {ANOVA}",
        cut=f.cut,
        winsorized=f.winsorized,
        **common,
    )
