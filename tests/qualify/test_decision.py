"""judge: infrastructure first, then the gate, then whether the bundle ran, then the speed rule."""

from hotfloat.qualify.decision import judge
from hotfloat.qualify.records import RuleConfig, RunFrame

RULE = RuleConfig(bootstrap=200)
ROUTED = {"activation.silu_and_mul": 10}


def ok(index, role, scale=1.0, tokens=(1, 2), routed=None):
    lat = [[0.5 * scale, 1.0 * scale, 1.5 * scale, 2.0 * scale]] * 2
    toks = [[list(tokens)] * 4] * 2
    return RunFrame(index=index, role=role, ok=True, latency_s=lat, tokens=toks, logprobs=[[[-1.0, -1.0]] * 4] * 2,
                    margins=[[[0.5, 0.5]] * 4] * 2, routed=routed if routed is not None else (ROUTED if role == "C" else {}))


def test_failed_baseline_run_is_no_decision():
    d = judge([RunFrame(index=0, role="B", ok=False, error="timeout")], RULE)
    assert d.status == "NO_DECISION" and "infrastructure" in d.reason


def test_candidate_that_raises_fails():
    d = judge([ok(0, "B"), RunFrame(index=1, role="C", ok=False, raised=True, error="engine raised ZeroDivisionError")], RULE)
    assert d.status == "FAIL" and d.score == 0


def test_candidate_that_dies_silently_is_no_decision():
    d = judge([ok(0, "B"), RunFrame(index=1, role="C", ok=False, error="closed the connection")], RULE)
    assert d.status == "NO_DECISION"


def test_wrong_tokens_fail_before_any_timing():
    d = judge([ok(0, "B"), ok(1, "C", tokens=(1, 3))], RULE)
    assert d.status == "FAIL" and d.gate == "FAIL"


def test_bundle_that_never_ran_is_not_applicable():
    d = judge([ok(0, "B"), ok(1, "C", routed={"activation.silu_and_mul": 0})], RULE)
    assert d.status == "N/A"


def test_needs_the_closing_baseline_run():
    assert judge([ok(0, "B"), ok(1, "C")], RULE) is None


def test_clearly_faster_candidate_passes_with_its_score():
    d = judge([ok(0, "B"), ok(1, "C", 0.9), ok(2, "B")], RULE)
    assert d.status == "PASS" and abs(d.score - 0.1) < 1e-9 and d.pairs == 1
