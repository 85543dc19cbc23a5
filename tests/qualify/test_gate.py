"""The correctness gate: exact match, near-tie flips under a tolerance, a baseline that disagrees with itself, and the
tolerance a twin sets."""

from hotfloat.qualify.gate import compare, gate
from hotfloat.qualify.records import RunFrame


def frame(index, role, tokens, logprobs=None, margins=None):
    lp = logprobs or [-1.0] * len(tokens)
    mg = margins or [0.5] * len(tokens)
    return RunFrame(
        index=index,
        role=role,
        ok=True,
        pass_s=[0.1],
        latency_s=[[0.1]],
        tokens=[[tokens]],
        logprobs=[[lp]],
        margins=[[mg]],
    )


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


def frames_of(index, role, diffs, flip_at=None, margins=None):
    """One pass of len(diffs) one-token requests: request k's logprob is -1 - diffs[k]; the requests in flip_at
    choose token 7 where the reference chose 1."""
    n = len(diffs)
    toks = [[7] if flip_at and k in flip_at else [1] for k in range(n)]
    return RunFrame(
        index=index,
        role=role,
        ok=True,
        pass_s=[0.1],
        latency_s=[[0.1] * n],
        tokens=[toks],
        logprobs=[[[-1.0 - d] for d in diffs]],
        margins=[[[m] for m in (margins or [0.5] * n)]],
    )


REF = frames_of(0, "B", [0.0] * 100)
TWIN = frames_of(3, "T", [0.01 * (k % 10) for k in range(100)], flip_at={5, 50})  # levels 0.04/0.08/0.09, 2% left


def test_twin_sets_the_tolerance_a_non_bit_exact_candidate_is_held_to():
    near = frames_of(1, "C", [0.012 * (k % 10) for k in range(100)], flip_at={9, 60, 77})
    assert gate([REF, near], 1e-3)[0] == "FAIL"  # without the twin only bit-exactness passes
    status, why = gate([REF, near, frames_of(2, "B", [0.0] * 100)], 1e-3, TWIN)
    assert status == "PASS" and "twin" in why, why


def test_a_candidate_beyond_twice_the_twin_fails_at_the_level_it_exceeds():
    wide = frames_of(1, "C", [0.025 * (k % 10) for k in range(100)])  # 2.5x the twin everywhere
    status, why = gate([REF, wide], 1e-3, TWIN)
    assert status == "FAIL" and "50% level" in why, why
    tail = frames_of(1, "C", [0.0] * 97 + [1.0, 1.0, 1.0])  # exact but for three wild tokens
    status, why = gate([REF, tail], 1e-3, TWIN)
    assert status == "FAIL" and "99% level" in why, why


def test_a_candidate_leaving_the_path_more_often_than_twice_the_twin_fails():
    runs_off = frames_of(1, "C", [0.0] * 100, flip_at=set(range(0, 100, 20)))  # 5% against the twin's 2%
    status, why = gate([REF, runs_off], 1e-3, TWIN)
    assert status == "FAIL" and "leaves the baseline's path at 5.00%" in why, why
    ties = frames_of(0, "B", [0.0] * 100, margins=[1e-4] * 100)  # departures at near ties are not counted
    assert gate([ties, runs_off], 1e-3, TWIN)[0] == "PASS"


def test_the_twin_never_excuses_malformed_output_and_a_bad_twin_decides_nothing():
    nan = frames_of(1, "C", [0.0] * 99 + [float("nan")])
    assert "non-finite" in gate([REF, nan], 1e-3, TWIN)[1]
    status, why = gate([REF, frames_of(1, "C", [0.0] * 100)], 1e-3, frames_of(3, "T", [float("inf")] * 100))
    assert status == "NO_DECISION" and "twin" in why


def test_an_exact_twin_leaves_the_floor_in_force():
    exact_twin = frames_of(3, "T", [0.0] * 100)
    assert gate([REF, frames_of(1, "C", [5e-4] * 100)], 1e-3, exact_twin)[0] == "PASS"
    assert gate([REF, frames_of(1, "C", [2e-3] * 100)], 1e-3, exact_twin)[0] == "FAIL"


def test_the_slack_is_the_rules_and_decides_a_candidate_between_them():
    """Twice the twin's departures: at the old slack of 2 (not beyond it), beyond the calibrated 1.5."""
    off = frames_of(1, "C", [0.0] * 100, flip_at={5, 30, 60, 90})  # 4% of compared tokens against the twin's 2%
    assert gate([REF, off], 1e-3, TWIN, 2.0)[0] == "PASS"
    status, why = gate([REF, off], 1e-3, TWIN, 1.5)
    assert status == "FAIL" and "1.5x the twin's" in why, why
