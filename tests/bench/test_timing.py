"""The statistics and the stopping rule of the bench timing loops."""

import pytest

from hotfloat.bench.timing import RSE_TARGET, cold_cpu, repeat, stat


def test_stat_reports_median_quartiles_and_relative_standard_error():
    s = stat([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median_us == 3.0
    assert s.q1_us <= s.median_us <= s.q3_us
    assert s.n == 5
    assert s.rse > 0.3  # one outlier in five samples is far from a 1% estimate


def test_repeat_stops_as_soon_as_steady_samples_meet_the_rse_target():
    batches = []
    s = repeat(lambda n: batches.append(n) or [10.0] * n, budget_s=60.0, batch=5, min_n=10)
    assert s.rse < RSE_TARGET and s.n == 10 and batches == [5, 5]


def test_repeat_gives_up_on_noisy_samples_when_the_budget_ends():
    noisy = iter(range(1, 10**6))
    s = repeat(lambda n: [float(next(noisy) % 7 + 1) * 100 for _ in range(n)], budget_s=0.0, batch=4, min_n=8)
    assert s.n == 8 and s.rse > RSE_TARGET


def test_cold_cpu_rotates_over_every_input_set_and_keeps_each_last_result():
    seen = []
    calls = [lambda i=i: seen.append(i) or i for i in range(3)]
    s, last = cold_cpu(calls, budget_s=0.0)
    assert last == [0, 1, 2]
    assert set(seen) == {0, 1, 2} and s.n == len(seen)


@pytest.mark.parametrize("samples", [[5.0], [5.0, 5.0]])
def test_stat_handles_tiny_samples(samples):
    assert stat(samples).median_us == 5.0


def test_cold_cpu_prepares_each_call_just_before_it_runs():
    order = []
    calls = [lambda i=i: order.append(("call", i)) for i in range(2)]
    cold_cpu(calls, budget_s=0.0, prepare=lambda i: order.append(("prepare", i)))
    assert len(order) >= 6 and order[0::2] == [("prepare", c[1]) for c in order[1::2]]
