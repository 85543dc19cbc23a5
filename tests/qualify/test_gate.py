"""The correctness gate: exact match, near-tie flips under a tolerance, and a baseline that disagrees with itself."""

from hotfloat.qualify.gate import compare, gate
from hotfloat.qualify.records import RunFrame


def frame(index, role, tokens, logprobs=None, margins=None):
    lp = logprobs or [-1.0] * len(tokens)
    mg = margins or [0.5] * len(tokens)
    return RunFrame(index=index, role=role, ok=True, pass_s=[0.1], latency_s=[[0.1]], tokens=[[tokens]], logprobs=[[lp]],
                    margins=[[mg]])


def test_identical_completions_agree_exactly():
    assert compare(frame(0, "B", [1, 2, 3]), frame(1, "C", [1, 2, 3]), 0.0) is None


def test_exact_mode_refuses_any_logprob_difference():
    why = compare(frame(0, "B", [1, 2]), frame(1, "C", [1, 2], [-1.0, -1.0 + 1e-7]), 0.0)
    assert why and "logprob" in why


def test_tolerance_allows_small_logprob_differences_only():
    ref = frame(0, "B", [1, 2])
    assert compare(ref, frame(1, "C", [1, 2], [-1.0005, -0.9995]), 1e-3) is None
    assert "logprob" in compare(ref, frame(1, "C", [1, 2], [-1.0, -1.01]), 1e-3)


def test_token_flip_at_a_near_tie_is_allowed_under_tolerance():
    ref = frame(0, "B", [1, 2, 3], margins=[0.5, 1e-4, 0.5])
    assert compare(ref, frame(1, "C", [1, 7, 9]), 1e-3) is None


def test_token_flip_without_a_tie_fails():
    ref = frame(0, "B", [1, 2, 3])
    why = compare(ref, frame(1, "C", [1, 7, 3]), 1e-3)
    assert why and "token 1" in why


def test_gate_fails_a_wrong_candidate_and_passes_a_right_one():
    assert gate([frame(0, "B", [1, 2]), frame(1, "C", [1, 5])], 0.0)[0] == "FAIL"
    assert gate([frame(0, "B", [1, 2]), frame(1, "C", [1, 2]), frame(2, "B", [1, 2])], 0.0)[0] == "PASS"


def test_nondeterministic_baseline_is_no_decision():
    status, why = gate([frame(0, "B", [1, 2]), frame(1, "C", [1, 2]), frame(2, "B", [1, 3])], 0.0)
    assert status == "NO_DECISION" and "baseline" in why


def test_non_finite_logprobs_never_pass_any_tolerance():
    ref = frame(0, "B", [1, 2])
    for bad in (float("nan"), float("inf"), float("-inf")):
        why = compare(ref, frame(1, "C", [1, 2], [-1.0, bad]), 10.0)
        assert why and "non-finite" in why and "token 1" in why
    assert "non-finite" in compare(ref, frame(1, "C", [1, 2], margins=[0.5, float("nan")]), 10.0)


def test_a_baseline_with_nan_logprobs_is_no_decision():
    nan = frame(2, "B", [1, 2], [-1.0, float("nan")])
    status, why = gate([frame(0, "B", [1, 2]), frame(1, "C", [1, 2]), nan], 0.1)
    assert status == "NO_DECISION" and "non-finite" in why
