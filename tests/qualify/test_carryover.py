"""carry_over: a candidate that leaves work running slows the baseline timed after it, and that shows."""

import random

from hotfloat.qualify.protocol import round_order
from hotfloat.qualify.carryover import carry_over
from hotfloat.qualify.decision import judge
from hotfloat.qualify.records import RuleConfig, RunFrame


def _frames(rounds: int, *, slowdown: float, noise: float, seed: int = 0):
    """Pass times of B, C, B' over `rounds` secret-ordered rounds; a baseline pass right after C takes `slowdown`
    longer (the work C left queued), every pass has multiplicative noise."""
    rng = random.Random(seed)
    order = [round_order(seed, r) for r in range(rounds)]
    times = {0: [], 1: [], 2: []}
    previous = None
    for r in range(rounds):
        slot = {}
        for e in order[r]:
            t = (0.98 if e == 1 else 1.0) * (1 + noise * rng.gauss(0, 1))
            slot[e] = t * (1 + slowdown if e != 1 and previous == 1 else 1)
            previous = e
        for e in (0, 1, 2):
            times[e].append(slot[e])
    frames = [
        RunFrame(
            index=e,
            role="C" if e == 1 else "B",
            ok=True,
            pass_s=times[e],
            latency_s=[[t] for t in times[e]],
            tokens=[[[1]]] * rounds,
            logprobs=[[[-1.0]]] * rounds,
            margins=[[[0.5]]] * rounds,
            routed={"activation.silu_and_mul": 10} if e == 1 else {},
        )
        for e in (0, 1, 2)
    ]
    return frames, order


def test_a_clean_candidate_is_not_charged():
    for seed in range(20):
        frames, order = _frames(40, slowdown=0.0, noise=0.003, seed=seed)
        co = carry_over(frames, order)
        assert co is not None and not co.charged(0.01), (seed, co)


def test_work_left_behind_is_charged_to_the_candidate():
    frames, order = _frames(40, slowdown=0.04, noise=0.003)
    co = carry_over(frames, order)
    assert co.charged(0.01) and 0.03 < co.penalty < 0.05
    assert co.after_c + co.after_baseline in (2 * 40 - 1, 2 * 40)  # every baseline pass but a very first one


def test_a_noisy_host_does_not_charge_a_clean_candidate_even_with_a_small_bound():
    frames, order = _frames(8, slowdown=0.0, noise=0.15, seed=3)
    co = carry_over(frames, order)
    assert co is None or not co.charged(0.001)


def test_too_few_rounds_give_no_estimate():
    frames, order = _frames(2, slowdown=0.5, noise=0.0)
    assert carry_over(frames, order) is None


def test_judge_fails_a_candidate_whose_gain_is_carry_over():
    rule = RuleConfig(look_rounds=10, max_looks=4, process_floor=0.001)
    frames, order = _frames(40, slowdown=0.04, noise=0.003)
    d = judge(frames, rule, order)
    assert d.status == "FAIL" and d.gate == "PASS" and d.reason.startswith("carry-over:"), d.reason
    clean, clean_order = _frames(40, slowdown=0.0, noise=0.003)
    assert judge(clean, rule, clean_order).status == "PASS"  # the same 2% gain without carry-over
    off = rule.model_copy(update={"carry_bound": 5.0})
    assert not judge(frames, off, order).reason.startswith("carry-over")
