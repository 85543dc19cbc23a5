"""judge: faults charged to the engine that had them (a candidate's FAIL, a baseline's or the host's NO_DECISION),
then the gate, whether the bundle ran, then the speed rule over the three resident engines' pass times."""

import pytest

from hotfloat.qualify.decision import judge
from hotfloat.qualify.records import RuleConfig, RunFrame

RULE = RuleConfig(look_rounds=4, max_looks=1, process_floor=0.001)
ROUTED = {"activation.silu_and_mul": 10}
ORDER = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 2, 1]]


def ok(index, role, scale=1.0, tokens=(1, 2), routed=None, rounds=4):
    jitter = [1.0, 1.001, 0.999, 1.0005][:rounds]
    return RunFrame(
        index=index,
        role=role,
        ok=True,
        pass_s=[scale * j for j in jitter],
        latency_s=[[scale] * 2] * rounds,
        tokens=[[list(tokens)] * 2] * rounds,
        logprobs=[[[-1.0, -1.0]] * 2] * rounds,
        margins=[[[0.5, 0.5]] * 2] * rounds,
        routed=routed if routed is not None else (ROUTED if role == "C" else {}),
    )


def failed(index, role, error, raised=False, fault=None):
    return RunFrame(index=index, role=role, ok=False, raised=raised, fault=fault, error=error)


@pytest.mark.parametrize("which", [0, 2])
def test_a_failed_baseline_engine_is_no_decision_even_when_it_raised(which):
    frames = [ok(0, "B"), ok(1, "C"), ok(2, "B")]
    frames[which] = failed(which, "B", "engine raised RuntimeError", raised=True)
    d = judge(frames, RULE, ORDER)
    assert d.status == "NO_DECISION" and "infrastructure" in d.reason


@pytest.mark.parametrize("kind", ["raised", "protocol", "died", "stalled", "identity", "isolation"])
def test_every_candidate_fault_but_the_hosts_is_a_fail(kind):
    """Dying, stalling, forging a frame or running GPU work while another engine is timed must not buy a re-roll."""
    d = judge([ok(0, "B"), failed(1, "C", f"the {kind} story", fault=kind), ok(2, "B")], RULE, ORDER)
    assert d.status == "FAIL" and d.score == 0 and d.fault == f"C:{kind}" and kind in d.reason


def test_a_host_fault_under_the_candidate_and_any_baseline_or_twin_fault_is_no_decision():
    d = judge([ok(0, "B"), failed(1, "C", "the engine could not be started", fault="host"), ok(2, "B")], RULE, ORDER)
    assert d.status == "NO_DECISION" and d.fault == "C:host"
    d = judge([ok(0, "B"), ok(1, "C"), failed(2, "B", "ran GPU work while stopped", fault="isolation")], RULE, ORDER)
    assert d.status == "NO_DECISION" and d.fault == "B:isolation"
    twin = failed(3, "T", "stalled", fault="stalled")
    d = judge([ok(0, "B"), ok(1, "C"), ok(2, "B")], RULE, ORDER, twin)
    assert d.status == "NO_DECISION" and d.fault == "T:stalled"


def test_evidence_v2_keeps_its_own_rule_for_candidate_faults():
    """v2 frames carry no fault kind: raised was the candidate's, dying silently was infrastructure."""
    d = judge(
        [ok(0, "B"), failed(1, "C", "engine sent a malformed completion for request 0", raised=True), ok(2, "B")],
        RULE,
        ORDER,
    )
    assert d.status == "FAIL" and d.gate == "FAIL" and d.score == 0 and "malformed" in d.reason
    d = judge([ok(0, "B"), failed(1, "C", "the engine process closed the connection"), ok(2, "B")], RULE, ORDER)
    assert d.status == "NO_DECISION" and "infrastructure" in d.reason and d.fault is None


def test_wrong_tokens_fail_before_any_timing():
    d = judge([ok(0, "B"), ok(1, "C", tokens=(1, 3)), ok(2, "B")], RULE, ORDER)
    assert d.status == "FAIL" and d.gate == "FAIL"


def test_nan_logprobs_from_the_candidate_fail_the_gate():
    c = ok(1, "C").model_copy(update={"logprobs": [[[-1.0, float("nan")]] * 2] * 4})
    d = judge([ok(0, "B"), c, ok(2, "B")], RULE, ORDER)
    assert d.status == "FAIL" and "non-finite" in d.reason


def test_bundle_that_never_ran_is_not_applicable():
    d = judge([ok(0, "B"), ok(1, "C", routed={"activation.silu_and_mul": 0}), ok(2, "B")], RULE, ORDER)
    assert d.status == "N/A"


def test_undecided_before_the_first_look():
    assert judge([ok(0, "B", rounds=3), ok(1, "C", 0.9, rounds=3), ok(2, "B", rounds=3)], RULE, ORDER) is None


def test_clearly_faster_candidate_passes_with_its_score():
    d = judge([ok(0, "B"), ok(1, "C", 0.9), ok(2, "B")], RULE, ORDER)
    assert d.status == "PASS" and d.score == pytest.approx(0.1, abs=1e-3) and d.rounds == 4


def test_frames_must_be_b_c_b_prime_with_equal_rounds():
    with pytest.raises(ValueError):
        judge([ok(0, "B"), ok(1, "C")], RULE, ORDER)
    with pytest.raises(ValueError):
        judge([ok(0, "B"), ok(1, "C", rounds=3), ok(2, "B")], RULE, ORDER)


def test_a_failed_twin_is_infrastructure_even_when_the_candidate_is_exact():
    frames = [ok(0, "B"), ok(1, "C"), ok(2, "B")]
    d = judge(frames, RULE, ORDER, failed(3, "T", "engine identity differs between B and engine 3"))
    assert d.status == "NO_DECISION" and "twin" in d.reason
    assert judge(frames, RULE, ORDER, ok(3, "T", rounds=2)).gate == "PASS"  # a working twin leaves the rest as it was
