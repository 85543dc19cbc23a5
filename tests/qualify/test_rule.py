"""The resident-engine speed rule on synthetic pass times: false PASS on B against B with per-pass and process noise
at the floors, power on a 2% gain, slowdowns FAIL, a biased baseline is NO_DECISION, and looks replay exactly."""

import math

import numpy as np
import pytest

from hotfloat.qualify.records import RuleConfig
from hotfloat.qualify.rule import critical_z, decide, look, trim_inflation, trimmed_mean

RULE = RuleConfig(look_rounds=10, max_looks=4, noise_floor=0.003, process_floor=0.003)


def rounds(rng, n, effect=0.0, sigma=0.003, tau=0.003, round_sd=0.05, tail=0.0):
    """Pass times of B, C, B' over n rounds: a common round factor (cancels), a persistent offset per engine process
    (tau), per-pass noise (sigma) and, with `tail`, that share of passes hit by a 30% stall."""
    offsets = np.exp(rng.normal(0, tau, 3))
    common = np.exp(rng.normal(0, round_sd, (n, 1)))
    x = 0.5 * common * offsets * np.exp(rng.normal(0, sigma, (n, 3)))
    x *= np.where(rng.random((n, 3)) < tail, 1.3, 1.0)
    x[:, 1] *= 1 - effect
    return x[:, 0], x[:, 1], x[:, 2]


def outcome(effect, n=400, seed=0, rule=RULE, **noise):
    rng = np.random.default_rng(seed)
    out = {"PASS": 0, "FAIL": 0, "NO_DECISION": 0}
    for _ in range(n):
        lk = decide(*rounds(rng, rule.max_rounds, effect, **noise), rule)
        out[lk.status] += 1
    return {k: v / n for k, v in out.items()}


@pytest.mark.parametrize("sigma,tau", [(0.001, 0.001), (0.003, 0.003), (0.02, 0.003)])
def test_false_pass_rate_on_b_against_b_is_at_most_one_percent(sigma, tau):
    """The guarantee holds while process noise is at most its floor; per-pass noise is measured, so any level."""
    assert outcome(0.0, sigma=sigma, tau=tau)["PASS"] <= 0.01


def test_stalled_passes_do_not_make_a_false_pass():
    assert outcome(0.0, tail=0.05)["PASS"] <= 0.01


def test_detects_a_two_percent_gain_at_the_floors():
    assert outcome(0.02, sigma=0.003, tau=0.001)["PASS"] >= 0.95


def test_a_slower_candidate_fails_and_never_passes():
    r = outcome(-0.03, n=100)
    assert r["FAIL"] >= 0.95 and r["PASS"] == 0


def test_a_baseline_biased_against_itself_is_no_decision():
    rng = np.random.default_rng(1)
    b, c, b2 = rounds(rng, 10, effect=0.2)
    lk = look(b, c, b2 * 1.05, RULE)
    assert lk.status == "NO_DECISION" and "bias" in lk.reason and lk.drift == pytest.approx(0.05, abs=0.01)


def test_decide_waits_for_a_full_look_and_then_replays_the_same_answer():
    rng = np.random.default_rng(2)
    b, c, b2 = rounds(rng, 40, effect=0.0005)
    assert decide(b[:9], c[:9], b2[:9], RULE) is None  # no look before 10 rounds
    first = decide(b[:10], c[:10], b2[:10], RULE)
    whole = decide(b, c, b2, RULE)
    assert whole is not None and whole.status == "FAIL"
    if first is not None:
        assert whole == first  # a recompute over more rounds stops where the live run stopped


def test_budget_spent_undecided_fails_as_not_shown_faster():
    rng = np.random.default_rng(3)
    rule = RULE.model_copy(update={"max_looks": 1, "process_floor": 0.02})
    lk = decide(*rounds(rng, 10, effect=0.02), rule)
    assert lk.status == "FAIL" and lk.reason.startswith("not shown faster: improvement") and lk.rounds == 10
    assert lk.lower < rule.margin < lk.upper and "budget of 10 rounds is spent" in lk.reason


def test_quantile_is_widened_for_few_rounds_and_trimmed_mean_resists_outliers():
    assert critical_z(RULE, 5) > critical_z(RULE, 50) > critical_z(RULE) > 2.5
    assert trim_inflation(0.0) == 1 and 1.0 < trim_inflation(0.2) < 1.1
    assert trimmed_mean(np.array([0.0, 0.1, 0.1, 0.1, 9.0]), 0.2) == pytest.approx(0.1)


def test_rejects_too_few_or_non_positive_pass_times():
    with pytest.raises(ValueError):
        look(np.ones(2), np.ones(2), np.ones(2), RULE)
    with pytest.raises(ValueError):
        look(np.ones(5), np.zeros(5), np.ones(5), RULE)
    assert math.isfinite(look(np.ones(5), np.ones(5), np.ones(5), RULE).lower)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_rejects_non_finite_pass_times(bad):
    """NaN slips through every comparison, so it must be refused before it becomes an 'undecided' interval."""
    with pytest.raises(ValueError, match="finite"):
        look(np.ones(5), np.full(5, bad), np.ones(5), RULE)


def test_pass_times_beyond_the_floats_are_a_value_error_not_an_overflow():
    with pytest.raises(ValueError, match="beyond any float"):
        look(np.ones(5), np.ones(5), np.full(5, 1e308), RULE)
