"""The resident-engine speed rule on synthetic pass times: false PASS on B against B with per-pass and process noise
at the floors, power on a 2% gain, slowdowns FAIL, a biased baseline is NO_DECISION, and looks replay exactly; under
the deployed CUDA rule, a candidate noisier than the baseline (or heavy-tailed) passes by luck under version 1 and not
under version 2, which keeps version 1's power at the H200's noise."""

import math

import numpy as np
import pytest

from hotfloat.qualify.options import default_rule
from hotfloat.qualify.records import Decision, RuleConfig
from hotfloat.qualify.rule import critical_z, decide, look, not_shown, trim_inflation, trimmed_mean

RULE = RuleConfig(look_rounds=10, max_looks=4, noise_floor=0.003, process_floor=0.003)
CUDA = default_rule("cuda", "NVIDIA H200")
CUDA_V1 = CUDA.model_copy(update={"version": 1})


def rounds(rng, n, effect=0.0, sigma=0.003, tau=0.003, round_sd=0.05, tail=0.0):
    """Pass times of B, C, B' over n rounds: a common round factor (cancels), a persistent offset per engine process
    (tau), per-pass noise (sigma) and, with `tail`, that share of passes hit by a 30% stall."""
    offsets = np.exp(rng.normal(0, tau, 3))
    common = np.exp(rng.normal(0, round_sd, (n, 1)))
    x = 0.5 * common * offsets * np.exp(rng.normal(0, sigma, (n, 3)))
    x *= np.where(rng.random((n, 3)) < tail, 1.3, 1.0)
    x[:, 1] *= 1 - effect
    return x[:, 0], x[:, 1], x[:, 2]


def trials(seed, count, rounds, effect=0.0, sigma=0.004, c_sigma=None, tau=0.001, c_t3=False, c_tail=0.0):
    """[qualification, round, (B, C, B')] pass times, vectorised: as `rounds`, but C's per-pass noise is its own
    (`c_sigma`, Student's t with 3 degrees of freedom at that s.d. with `c_t3`) and `c_tail` of C's passes are
    stalled or sped by 10-30%."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 1, (count, rounds, 3)) * sigma
    noise[:, :, 1] = (rng.standard_t(3, (count, rounds)) / math.sqrt(3) if c_t3 else noise[:, :, 1] / sigma) * (
        c_sigma or sigma
    )
    hit = rng.random((count, rounds)) < c_tail
    noise[:, :, 1] += np.where(hit, np.log1p(rng.uniform(0.1, 0.3, hit.shape) * rng.choice([-1, 1], hit.shape)), 0)
    x = 0.5 * np.exp(rng.normal(0, tau, (count, 1, 3)) + rng.normal(0, 0.05, (count, rounds, 1)) + noise)
    x[:, :, 1] *= 1 - effect
    return x


def pass_rate(x, rule):
    return float(np.mean([decide(q[:, 0], q[:, 1], q[:, 2], rule).status == "PASS" for q in x]))


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
    spent = Decision(status=lk.status, reason=lk.reason, lower=lk.lower, upper=lk.upper, rounds=lk.rounds, gate="PASS")
    assert not_shown(spent, rule), "the budget ran out with the margin inside the interval"
    slower = spent.model_copy(update={"upper": rule.margin / 2})
    wrong, faulted = spent.model_copy(update={"gate": "FAIL"}), spent.model_copy(update={"fault": "C:stalled"})
    assert not any(not_shown(d, rule) for d in (slower, wrong, faulted, spent.model_copy(update={"status": "PASS"})))


def test_quantile_is_widened_for_few_rounds_and_trimmed_mean_resists_outliers():
    assert critical_z(RULE, 4) > critical_z(RULE, 49) > critical_z(RULE) > 2.5
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


NOISY = {
    "0.4%": dict(c_sigma=0.004),
    "1%": dict(c_sigma=0.01),
    "3%": dict(c_sigma=0.03),
    "t3 at 3%": dict(c_sigma=0.03, c_t3=True),
    "0.4%, 5% stalled or sped": dict(c_tail=0.05),
    "2%, 5% stalled or sped": dict(c_sigma=0.02, c_tail=0.05),
}


@pytest.mark.parametrize("c_noise", NOISY.values(), ids=NOISY.keys())
def test_a_noisier_candidate_does_not_pass_by_luck(c_noise):
    """Deployed CUDA rule, no true gain, baselines at 0.4% per pass, offsets at the process floor; C's own noise
    varies. The target is 1%: asserting half of it fails a rule truly at 1% (20 PASSes expected in 2000)."""
    assert pass_rate(trials(11, 2000, CUDA.max_rounds, **c_noise), CUDA) <= 0.005


def test_version_1_passed_a_candidate_with_2_percent_noise_by_luck():
    """The issue's failure (6.3% false PASS), which version 2 removes on the same 4000 qualifications."""
    x = trials(12, 4000, CUDA.max_rounds, c_sigma=0.02)
    assert pass_rate(x, CUDA_V1) >= 0.04 and pass_rate(x, CUDA) <= 0.005


@pytest.mark.parametrize("sigma", [0.004, 0.005])
def test_version_2_keeps_version_1s_power_at_the_h200_noise(sigma):
    """A 2% gain, every engine at the H200's per-pass noise: the same qualifications decided by both versions."""
    x = trials(13, 2000, CUDA.max_rounds, effect=0.02, sigma=sigma)
    v1, v2 = pass_rate(x, CUDA_V1), pass_rate(x, CUDA)
    assert v2 >= v1 - 0.01 and v1 >= 0.8


def test_cs_own_noise_widens_the_interval_a_wild_pass_only_so_much_and_a_stalled_baseline_pass_not():
    def width(y, rule=CUDA):
        lk = look(y[:, 0], y[:, 1], y[:, 2], rule)
        return lk.upper - lk.lower

    noisy = trials(16, 1, 10, effect=0.02, c_sigma=0.03)[0]
    assert width(noisy) > 3 * width(noisy, CUDA_V1)
    clean = trials(16, 1, 10, effect=0.02)[0]
    b_stall, c_stall, c_wild = clean.copy(), clean.copy(), clean.copy()
    b_stall[3, 0] *= 1.3
    c_stall[3, 1] *= 1.3
    c_wild[3, 1] *= 3
    assert width(b_stall) < 1.2 * width(clean) and width(c_wild) == width(c_stall) < 1.6 * width(clean)
