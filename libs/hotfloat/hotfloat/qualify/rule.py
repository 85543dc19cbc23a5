"""The speed decision over resident engines: within-round ratios, the baseline against itself, a sequential test.

Every round serves one pass on each of B, C and B' (the same stock engine as B in a third process) in an order
drawn from the secret, so slow phases of the machine hit all three alike and cancel in ratios taken within a round.
Per round, d = ln(B'/B) is the baseline against itself and e = ln(sqrt(B B') / C) the candidate's gain; the
estimate is a trimmed mean of e (a stray slow pass cannot carry it).

Two noises widen its interval. Per-pass noise sigma, measured robustly from d (median absolute deviation, never
below `noise_floor`), averages out over rounds: were C one more draw like B and B', it would add 1.5 sigma^2 / n.
C's own spread in e takes its place when larger (`own_noise`); version 1 of the rule, kept so that older evidence
recomputes, took C to be no noisier and let a noisier candidate pass by luck. Process noise tau, a persistent
offset of one engine process against another (CPU placement, memory layout), does not average out within a
qualification: it adds 1.5 tau^2 whatever n is. It is estimated from this qualification's own B against B' (median
d, one pair, so never below the calibrated `process_floor`). With few rounds the normal quantile is corrected towards
Student's t. Above `drift_bound` the rule refuses to decide.
The test looks every `look_rounds` rounds; alpha is split evenly over `max_looks`, so stopping early cannot
inflate the false PASS rate. The burden of proof is the candidate's: still undecided when the budget is spent, it
FAILs as not shown faster, since that answers the question asked (faster by the margin?) with no. NO_DECISION is
kept for a measurement that cannot be trusted, the baseline disagreeing with itself, so that a host fault and a
kernel without effect never read the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .records import Decision, RuleConfig

NOT_SHOWN = "not shown faster"
"""How a FAIL at the end of the budget begins its reason; the demo tells it apart from a slowdown by it."""
MAD_TO_SD = 1.4826
"""Median absolute deviation to standard deviation for normal data."""


@dataclass(frozen=True)
class Look:
    """The rule's reading after some rounds: the decision so far, or None while undecided. Fractions of pass time."""

    status: str | None
    reason: str
    improvement: float
    lower: float
    upper: float
    drift: float
    rounds: int
    score: float


def critical_z(rule: RuleConfig, df: float | None = None) -> float:
    """One-sided quantile for alpha split over every possible look; with df, Student's t with that many degrees of
    freedom (Cornish-Fisher expansion), since the noise is estimated from the rounds."""
    z = NormalDist().inv_cdf(1 - rule.alpha / rule.max_looks)
    if df is None:
        return z
    v = max(df, 1)
    return z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v * v)


def trimmed_mean(x: np.ndarray, trim: float) -> float:
    """Mean after dropping `trim` of the values at each end; 0.5 is the median."""
    if trim >= 0.5:
        return float(np.median(x))
    k = int(math.floor(trim * len(x)))
    s = np.sort(x)
    return float(np.mean(s[k : len(s) - k]))


def trim_inflation(trim: float) -> float:
    """Standard error of a trimmed mean over that of the mean, for normal data (1 untrimmed, ~1.07 at 20%,
    sqrt(pi/2) for the median)."""
    if trim <= 0:
        return 1.0
    if trim >= 0.5:
        return math.sqrt(math.pi / 2)
    q = NormalDist().inv_cdf(1 - trim)
    phi = math.exp(-q * q / 2) / math.sqrt(2 * math.pi)
    var = (1 - 2 * trim - 2 * q * phi + 2 * trim * q * q) / (1 - 2 * trim) ** 2
    return math.sqrt(var)


def own_noise(d_dev: np.ndarray, e_dev: np.ndarray, sigma: float, rule: RuleConfig) -> tuple[float, float]:
    """Version 2's per-pass noise (e varies by 1.5 times its square) and degrees of freedom, from |d - median d| and
    |e - estimate|. The one assumption is that C is no quieter than the baseline: above sigma e's spread stands alone,
    below it is pooled with sigma (Satterthwaite). The spread is the mean absolute deviation, which keeps nearly all of
    the standard deviation's precision over 5 rounds where the MAD keeps a third; each deviation is capped at 4 robust
    s.d. (never fewer than the baseline's), so one wild pass of C's cannot swamp the median's interval, and rounds whose
    baselines disagree are left out, since a stalled baseline pass is not C's noise."""
    keep = d_dev <= 5 * math.sqrt(2) * sigma
    n, k = len(e_dev), int(keep.sum())  # k >= n / 2: every round within one MAD of the median is kept
    cap = 4 * max(MAD_TO_SD * float(np.median(e_dev)), math.sqrt(1.5) * sigma)
    own = math.pi / 3 * float(np.mean(np.minimum(e_dev, cap)[keep])) ** 2 * k / (k - 1)
    base = sigma**2
    if own >= base:
        return math.sqrt(own), k - 1
    df = (base + own) ** 2 / (base**2 / (n - 1) + own**2 / (k - 1))
    return max(math.sqrt((base + own) / 2), rule.noise_floor), df


def look(b: np.ndarray, c: np.ndarray, b2: np.ndarray, rule: RuleConfig) -> Look:
    """Applies the rule to the pass times of the first n rounds (B, C, B' per round)."""
    n = len(b)
    if n < 3 or not len(c) == len(b2) == n or not all(np.isfinite(x).all() and x.min() > 0 for x in (b, c, b2)):
        raise ValueError(
            f"need at least 3 rounds of positive, finite pass times for B, C and B', got {len(b)}, {len(c)}, {len(b2)}"
        )
    d = np.log(b2) - np.log(b)
    e = (np.log(b) + np.log(b2)) / 2 - np.log(c)
    bias = float(np.median(d))
    d_dev = np.abs(d - bias)
    sigma = max(MAD_TO_SD * float(np.median(d_dev)) / math.sqrt(2), rule.noise_floor)
    tau = max(abs(bias) / math.sqrt(2), rule.process_floor)
    t = trimmed_mean(e, rule.trim)
    s, df = (sigma, n - 1) if rule.version == 1 else own_noise(d_dev, np.abs(e - t), sigma, rule)
    se = math.sqrt(1.5 * tau**2 + 1.5 * (s * trim_inflation(rule.trim)) ** 2 / n)
    z = critical_z(rule, df)
    frac = lambda v: -math.expm1(-v)  # noqa: E731  (log gain -> fraction of baseline time saved)
    try:
        imp, lower, upper, drift = frac(t), frac(t - z * se), frac(t + z * se), abs(frac(bias))
    except OverflowError:  # only pass times or rule parameters no real run produces get here (read back from a file)
        raise ValueError(
            "pass times or rule parameters put the interval beyond any float (ratios past e^700)"
        ) from None
    base = dict(improvement=imp, lower=lower, upper=upper, drift=drift, rounds=n, score=max(0.0, imp))
    if drift > rule.drift_bound:
        return Look("NO_DECISION", f"baseline B vs B' bias {drift:.2%} exceeds {rule.drift_bound:.2%}", **base)
    if lower > rule.margin:
        return Look(
            "PASS", f"improvement {imp:.2%}, lower bound {lower:.2%} clears the {rule.margin:.2%} margin", **base
        )
    if upper < rule.margin:
        return Look(
            "FAIL", f"improvement {imp:.2%}, upper bound {upper:.2%} below the {rule.margin:.2%} margin", **base
        )
    return Look(None, f"undecided: improvement {imp:.2%} in [{lower:.2%}, {upper:.2%}] after {n} round(s)", **base)


def decide(b, c, b2, rule: RuleConfig) -> Look | None:
    """Replays the sequential test over the rounds so far: the first decisive look wins; None while undecided and
    budget is left. The live protocol and a recompute call this on the same pass times and get the same answer.
    Undecided with the budget spent is FAIL: the candidate was not shown faster than the margin."""
    b, c, b2 = (np.asarray(x, dtype=float) for x in (b, c, b2))
    last = None
    for k in range(1, rule.max_looks + 1):
        n = k * rule.look_rounds
        if n > len(b):
            break
        last = look(b[:n], c[:n], b2[:n], rule)
        if last.status is not None:
            return last
    if last is not None and last.rounds >= rule.max_rounds:
        return Look(
            "FAIL",
            f"{NOT_SHOWN}: {last.reason.removeprefix('undecided: ')}; the budget of "
            f"{rule.max_rounds} rounds is spent without the lower bound clearing the {rule.margin:.2%} margin",
            **{k: getattr(last, k) for k in ("improvement", "lower", "upper", "drift", "rounds", "score")},
        )
    return None


def not_shown(decision: Decision, rule: RuleConfig) -> bool:
    """Whether a FAIL is `decide`'s NOT_SHOWN: a correct, unfaulted run whose interval still held the margin when
    the budget ran out, rather than a candidate shown slower (upper bound below the margin), wrong or at fault."""
    return (
        decision.status == "FAIL"
        and decision.gate == "PASS"
        and decision.fault is None
        and (decision.upper or 0) >= rule.margin
    )
