"""Calibration: how often the decision rule passes a candidate that is not faster, and how small a real
speed-up it detects, measured on real engine processes of this machine.

Every run is a fresh engine process. The baseline carries `base_passes` extra stock activation passes per MLP call
(a sleep-free cost); a level-L candidate carries `base_passes - L`, so it is faster by a known amount of real work,
and level 0 is B against B. Runs are interleaved B X B X ... over the levels. Qualifications are then drawn from
this pool (k candidate runs of one level between k + 1 baseline runs, in time order) and replayed through the
same sequential rule; a second estimate simulates the rule on the noise measured in the pool, for resolution
below what a small pool can show.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from .records import EngineSpec, Record, RuleConfig, RunFrame, Workload
from .rule import decide
from .runner import Launch, run_engine


class LevelRow(Record):
    """The rule's behaviour on one injected difference."""

    level: int
    """Extra activation passes removed from the candidate (0: B against B)."""
    true_improvement: float
    """Median over requests of the pooled improvement of every level-L run against every baseline run."""
    pass_rate: float
    fail_rate: float
    no_decision_rate: float
    mean_pairs: float
    model_pass_rate: float
    """Pass rate of the rule simulated with the pool's measured run and request noise and this true improvement."""


class CalibrationReport(Record):
    """What calibration measured and what it recommends."""

    levels: list[LevelRow]
    runs: int
    run_seconds: float
    """Median engine process lifetime (start-up, warm-up and timed passes)."""
    sigma_run: float
    """Run-to-run noise: s.d. of a baseline run's median relative latency around the pool's."""
    sigma_request: float
    """Request-level noise within a run after the median over passes."""
    false_pass_rate: float
    """Pass rate at level 0 (B against B) over the drawn qualifications."""
    model_false_pass_rate: float
    smallest_detected: float | None
    """Smallest true improvement passed with at least 95% probability (pool draws), None if none was."""
    qualification_minutes: float
    """Expected wall time of one qualification of the smallest detected level: (2 * mean pairs + 1) runs."""
    rule: RuleConfig
    trials: int


def pool_runs(engine: EngineSpec, workload: Workload, levels: list[int], rounds: int, base_passes: int,
              threads: int = 1, progress: Callable[[str, int, int], None] | None = None,
              budget_s: float | None = None, warm: bool = True, sandboxed: bool = True) -> list[tuple[int | None, RunFrame]]:
    """Runs B X_l1 B X_l2 ... B for `rounds` cycles over the levels; returns (level or None for B, frame).

    With `budget_s` (counted from the start), a candidate run starts only if it and the baseline run that must close
    the pool fit in what is left at the pace of the runs so far, so the pool still ends on a baseline run. Runs are
    sandboxed like a qualification's (no candidate code runs, but the conditions timed must be the same)."""
    t0 = time.monotonic()
    order: list[int | None] = []
    for _ in range(rounds):
        for lv in levels:
            order += [None, lv]
    order.append(None)
    out = []
    for i, lv in enumerate(order):
        if budget_s is not None and lv is not None and out:
            pace = float(np.median([f.wall_s for _, f in out]))
            if time.monotonic() - t0 + 2 * pace > budget_s:
                break
        if progress:
            progress(f"calibration run {i + 1}/{len(order)}", i, len(order))
        extra = base_passes - (lv or 0)
        launch = Launch(warm=warm, sandboxed=sandboxed, threads=threads, extra_passes={"B": extra, "C": extra})
        frame, _ = run_engine(i, "B" if lv is None else "C", engine, workload, None, None, launch)
        if not frame.ok:
            raise RuntimeError(f"calibration run {i} failed: {frame.error}")
        out.append((lv, frame))
    return out


def analyse(pool: list[tuple[int | None, RunFrame]], rule: RuleConfig, trials: int, seed: int = 0) -> CalibrationReport:
    """Replays the rule on qualifications drawn from the pool and on a noise model fitted to it."""
    if sum(lv is None for lv, _ in pool) < 3 or all(lv is None for lv, _ in pool):
        raise ValueError("calibration needs at least three baseline runs and one candidate run")
    rng = np.random.default_rng(seed)
    vec = [np.median(np.asarray(f.latency_s), axis=0) for _, f in pool]
    b_idx = [i for i, (lv, _) in enumerate(pool) if lv is None]
    b_all = np.stack([vec[i] for i in b_idx])
    b_mean = b_all.mean(axis=0)
    run_dev = np.median(b_all / b_mean, axis=1) - 1
    sigma_run = float(np.std(run_dev, ddof=1))
    resid = b_all / b_mean / (1 + run_dev[:, None]) - 1
    sigma_req = float(np.std(resid, ddof=1))
    rows = []
    for lv in sorted({lv for lv, _ in pool if lv is not None}):
        x_idx = [i for i, (l2, _) in enumerate(pool) if l2 == lv]
        true = float(np.median((b_mean - np.stack([vec[i] for i in x_idx]).mean(axis=0)) / b_mean))
        counts = {"PASS": 0, "FAIL": 0, "NO_DECISION": 0}
        pairs = 0
        for _ in range(trials):
            look = _draw(rng, vec, b_idx, x_idx, rule)
            counts[look.status] += 1
            pairs += look.pairs
        model = _simulate(rng, b_mean, true, sigma_run, sigma_req, rule, max(200, trials // 4))
        rows.append(LevelRow(level=lv, true_improvement=true, pass_rate=counts["PASS"] / trials,
                             fail_rate=counts["FAIL"] / trials, no_decision_rate=counts["NO_DECISION"] / trials,
                             mean_pairs=pairs / trials, model_pass_rate=model))
    detected = [r for r in rows if r.level > 0 and r.pass_rate >= 0.95]
    best = min(detected, key=lambda r: r.true_improvement) if detected else None
    run_s = float(np.median([f.wall_s for _, f in pool]))
    zero = next((r for r in rows if r.level == 0), None)
    return CalibrationReport(
        levels=rows, runs=len(pool), run_seconds=run_s, sigma_run=sigma_run, sigma_request=sigma_req,
        false_pass_rate=zero.pass_rate if zero else float("nan"),
        model_false_pass_rate=zero.model_pass_rate if zero else float("nan"),
        smallest_detected=best.true_improvement if best else None,
        qualification_minutes=(2 * (best.mean_pairs if best else rule.max_pairs) + 1) * run_s / 60, rule=rule, trials=trials,
    )


def _draw(rng, vec, b_idx, x_idx, rule):
    """One qualification from the pool: k candidate runs between k + 1 baseline runs, time order kept, looked at
    sequentially exactly as live (stopping at the first decision)."""
    k_max = min(rule.max_pairs, len(x_idx), len(b_idx) - 1)
    xs = sorted(rng.choice(x_idx, size=k_max, replace=False))
    bs = sorted(rng.choice(b_idx, size=k_max + 1, replace=False))
    runs = [("B", vec[bs[0]])]
    for j in range(k_max):
        runs += [("C", vec[xs[j]]), ("B", vec[bs[j + 1]])]
    return decide(runs, rule.model_copy(update={"max_pairs": k_max}))


def _simulate(rng, base, effect, sigma_run, sigma_req, rule, n) -> float:
    """Pass rate of the sequential rule on synthetic runs with the measured noise and a known effect."""
    passed = 0
    for _ in range(n):
        def run(c):
            v = base * (1 + rng.normal(0, sigma_run)) * (1 + rng.normal(0, sigma_req, len(base)))
            return v * (1 - effect) if c else v
        runs = [("B", run(False))]
        while True:
            runs += [("C", run(True)), ("B", run(False))]
            look = decide(runs, rule)
            if look.status is not None:
                break
        passed += look.status == "PASS"
    return passed / n
