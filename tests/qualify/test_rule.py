"""The speed rule on synthetic timing data: false PASS rate on B against B, power on known effects, drift."""

import numpy as np
import pytest

from hotfloat.qualify.records import RuleConfig
from hotfloat.qualify.rule import decide, look

RULE = RuleConfig(bootstrap=300)


def simulate(effect, sigma_run, sigma_req=0.005, n=300, seed=0, rule=RULE, requests=16):
    """Sequential qualifications with a known effect; returns the share of each status."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.05, 2.0, requests)
    out = {"PASS": 0, "FAIL": 0, "NO_DECISION": 0}
    for _ in range(n):
        def run(c):
            v = base * (1 + rng.normal(0, sigma_run)) * (1 + rng.normal(0, sigma_req, requests))
            return ("C", v * (1 - effect)) if c else ("B", v)
        runs = [run(False)]
        while True:
            runs += [run(True), run(False)]
            lk = decide(runs, rule)
            if lk.status:
                break
        out[lk.status] += 1
    return {k: v / n for k, v in out.items()}


@pytest.mark.parametrize("sigma_run", [0.001, RULE.noise_floor])
def test_false_pass_rate_on_b_against_b_is_at_most_one_percent(sigma_run):
    """The guarantee holds while the true run noise is at most the calibrated floor."""
    assert simulate(0.0, sigma_run, n=250)["PASS"] <= 0.01


def test_detects_a_two_percent_improvement_at_calibrated_noise():
    assert simulate(0.02, 0.003)["PASS"] >= 0.95


def test_clear_slowdown_fails_and_never_passes():
    r = simulate(-0.05, 0.003, n=100)
    assert r["PASS"] == 0 and r["FAIL"] >= 0.95


def test_noise_above_the_floor_widens_the_interval():
    rng = np.random.default_rng(1)
    b = rng.uniform(0.5, 1, 16)
    quiet = look([b, b * 1.001], [b * 0.98], RULE)
    noisy = look([b, b * 1.015], [b * 0.98], RULE)
    assert noisy.lower < quiet.lower and noisy.upper > quiet.upper


def test_baseline_drift_is_no_decision_never_a_loss():
    b = np.full(8, 1.0)
    lk = decide([("B", b), ("C", b * 1.5), ("B", b * 1.05)], RULE)
    assert lk.status == "NO_DECISION" and "drift" in lk.reason


def test_score_is_median_of_clamped_improvement():
    b = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    c = np.array([0.9, 0.95, 0.97, 1.2, 1.3])
    lk = look([b, b], [c], RULE)
    assert lk.improvement == pytest.approx(0.03) and lk.score == pytest.approx(0.03)
    assert look([b, b], [b * 1.1], RULE).score == 0.0


def test_budget_spent_undecided_is_no_decision():
    rng = np.random.default_rng(2)
    base = rng.uniform(0.5, 1, 16)
    rule = RuleConfig(bootstrap=300, max_pairs=1, noise_floor=0.01)
    lk = decide([("B", base), ("C", base * 0.995), ("B", base * 1.001)], rule)
    assert lk.status == "NO_DECISION" and "budget" in lk.reason


def test_deterministic_for_recompute():
    rng = np.random.default_rng(3)
    runs = [(r, rng.uniform(0.5, 1, 12)) for r in "BCB"]
    assert decide(runs, RULE) == decide(runs, RULE)


def test_runs_must_alternate():
    v = np.ones(4)
    with pytest.raises(ValueError):
        decide([("B", v), ("B", v), ("C", v)], RULE)
    with pytest.raises(ValueError):
        decide([("B", v), ("C", v)], RULE)
