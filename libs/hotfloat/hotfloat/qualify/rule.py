"""The speed decision: bracketed improvement, paired bootstrap plus run-level noise, and a sequential test.

Runs alternate B C B C B ...; candidate run j is compared with the mean of the baseline runs before and after it,
which cancels a linear drift of the machine. Two noise sources widen the confidence interval: request-level noise
(a paired bootstrap over requests, each request's baseline and candidate kept together) and run-level noise (one
engine process being faster than another), estimated from the baseline's own B vs B' differences and never below
the calibrated `noise_floor`. The test looks after every candidate run; the error rate `alpha` is split evenly over
the `max_pairs` looks, so stopping early cannot inflate the false PASS rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .records import RuleConfig


@dataclass(frozen=True)
class Look:
    """The rule's reading after some candidate runs: the decision so far, or None while undecided."""

    status: str | None
    reason: str
    improvement: float
    lower: float
    upper: float
    drift: float
    pairs: int
    score: float


def critical_z(rule: RuleConfig) -> float:
    """One-sided normal quantile for alpha split over every possible look."""
    return NormalDist().inv_cdf(1 - rule.alpha / rule.max_pairs)


def look(baselines: list[np.ndarray], candidates: list[np.ndarray], rule: RuleConfig) -> Look:
    """Applies the rule to k candidate runs and the k+1 baseline runs around them (per-request latency vectors)."""
    k = len(candidates)
    if k < 1 or len(baselines) != k + 1:
        raise ValueError(f"need k >= 1 candidate runs and k + 1 baseline runs, got {k} and {len(baselines)}")
    b_runs = np.stack(baselines)
    c_runs = np.stack(candidates)
    drifts = np.median((b_runs[1:] - b_runs[:-1]) / b_runs[:-1], axis=1)
    drift = float(np.max(np.abs(drifts)))
    bracket = (b_runs[:-1] + b_runs[1:]) / 2
    b = bracket.mean(axis=0)
    u = (b - c_runs.mean(axis=0)) / b
    t = float(np.median(u))
    score = max(0.0, t)
    se = np.sqrt(_bootstrap_se(u, rule) ** 2 + _run_variance(drifts, k, rule))
    z = critical_z(rule)
    lower, upper = t - z * se, t + z * se
    base = dict(improvement=t, lower=float(lower), upper=float(upper), drift=drift, pairs=k, score=score)
    if drift > rule.drift_bound:
        return Look("NO_DECISION", f"baseline drift {drift:.2%} between B runs exceeds {rule.drift_bound:.2%}", **base)
    if lower > rule.margin:
        return Look("PASS", f"improvement {t:.2%}, lower bound {lower:.2%} clears the {rule.margin:.2%} margin", **base)
    if upper < rule.margin:
        return Look("FAIL", f"improvement {t:.2%}, upper bound {upper:.2%} below the {rule.margin:.2%} margin", **base)
    return Look(None, f"undecided: improvement {t:.2%} in [{lower:.2%}, {upper:.2%}] after {k} pair(s)", **base)


def decide(runs: list[tuple[str, np.ndarray]], rule: RuleConfig) -> Look:
    """Replays the sequential test over runs in protocol order (B C B C B ...): the first decisive look wins.

    The live runner calls this after every pair and stops at a decision; a recompute calls it on all frames and gets
    the same answer. Undecided with the budget spent is NO_DECISION: noise is never the candidate's loss or win.
    """
    roles = "".join(r for r, _ in runs)
    if len(runs) < 3 or roles != ("BC" * (len(runs) // 2) + "B")[: len(runs)] or roles[-1] != "B":
        raise ValueError(f"runs must alternate B C B ... and end with B, got {roles!r}")
    vectors = [v for _, v in runs]
    last = None
    for k in range(1, len(runs) // 2 + 1):
        last = look(vectors[0 : 2 * k + 1 : 2], vectors[1 : 2 * k : 2], rule)
        if last.status is not None:
            return last
    assert last is not None
    if last.pairs >= rule.max_pairs:
        return Look("NO_DECISION", f"{last.reason}; budget of {rule.max_pairs} pair(s) spent", **_fields(last))
    return last


def _fields(lk: Look) -> dict:
    return dict(improvement=lk.improvement, lower=lk.lower, upper=lk.upper, drift=lk.drift, pairs=lk.pairs, score=lk.score)


def _bootstrap_se(u: np.ndarray, rule: RuleConfig) -> float:
    """Standard error of the median improvement by resampling requests; seeded, so a recompute is exact."""
    rng = np.random.default_rng(rule.bootstrap_seed)
    idx = rng.integers(0, len(u), size=(rule.bootstrap, len(u)))
    return float(np.std(np.median(u[idx], axis=1)))


def _run_variance(drifts: np.ndarray, k: int, rule: RuleConfig) -> float:
    """Variance of the pooled improvement due to whole-run noise sigma: B'-B differences have variance 2 sigma^2,
    and pooling k candidate runs against k overlapping brackets leaves sigma^2 (8k - 2) / (4k^2)."""
    sigma2 = max(float(np.mean(drifts**2)) / 2, rule.noise_floor**2)
    return sigma2 * (8 * k - 2) / (4 * k * k)
