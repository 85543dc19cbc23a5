"""Settlement, the one reproduction rule: two independent passes are required and the lower score is kept; only a
failed correctness gate or a run the candidate's own engine broke fails, anything else unreproduced is NO_DECISION."""

import pytest

from hotfloat.validator import Attempt, settle

H = "a" * 64


def att(status, score=0.0, identity=H, gate=None, reason="", fault=None):
    return Attempt(identity=identity, status=status, score=score, gate=gate, reason=reason, fault=fault)


def test_two_passes_keep_the_lower_score():
    s = settle(att("PASS", 0.031), att("PASS", 0.027))
    assert s.status == "PASS" and s.score == pytest.approx(0.027)


def test_one_pass_is_not_enough():
    assert settle(att("PASS", 0.05), att("NO_DECISION")).status == "NO_DECISION"
    assert settle(att("PASS", 0.05), att("NO_DECISION")).score == 0


@pytest.mark.parametrize(
    ("status", "gate", "ends"),
    [
        ("FAIL", "FAIL", "FAIL"),  # wrong tokens in the second run: wrong, whenever it happens
        ("FAIL", "PASS", "NO_DECISION"),  # correct but slower this time: not reproduced, not a loss
        ("FAIL", None, "NO_DECISION"),  # failed before the gate ran: nothing says it is wrong
        ("NO_DECISION", "PASS", "NO_DECISION"),
        ("NO_DECISION", "N/A", "NO_DECISION"),  # infrastructure
        ("N/A", None, "NO_DECISION"),
    ],
)
def test_an_unreproduced_pass_fails_only_on_the_correctness_gate(status, gate, ends):
    s = settle(att("PASS", 0.05), att(status, gate=gate, reason="why"))
    assert s.status == ends and s.score == 0
    assert s.reason.endswith(": why") and ("correctness gate" in s.reason) == (ends == "FAIL")
    if ends == "NO_DECISION":
        assert s.reason == f"the qualification PASS did not reproduce: second run {status}: why"


def test_a_gate_failure_in_either_run_fails():
    s = settle(att("FAIL", gate="FAIL", reason="tokens differ"), att("PASS", 0.05))
    assert s.status == "FAIL" and s.reason == "the first qualification failed the correctness gate: tokens differ"


def test_never_ran_is_not_applicable():
    assert settle(att("N/A"), att("N/A")).status == "N/A"


def test_different_bundles_refused():
    with pytest.raises(ValueError):
        settle(att("PASS", 0.1), att("PASS", 0.1, identity="b" * 64))


def test_attempt_rejects_bad_identity_and_score():
    with pytest.raises(ValueError):
        Attempt(identity="xyz", status="PASS", score=0.1)
    with pytest.raises(ValueError):
        Attempt(identity=H, status="PASS", score=-0.1)


@pytest.mark.parametrize(
    ("fault", "ends"),
    [
        ("C:isolation", "FAIL"),
        ("C:died", "FAIL"),
        ("C:protocol", "FAIL"),
        ("C:host", "NO_DECISION"),
        ("B:stalled", "NO_DECISION"),
    ],
)
def test_a_run_the_candidates_engine_broke_is_a_loss_never_a_re_roll(fault, ends):
    """Honest in the first run, leaving GPU work running in the second: the second run's FAIL stands."""
    status = "FAIL" if fault.startswith("C:") and fault != "C:host" else "NO_DECISION"
    s = settle(att("PASS", 0.05), att(status, reason="why", fault=fault))
    assert s.status == ends and s.score == 0
    assert ("broken by the candidate's engine" in s.reason) == (ends == "FAIL")
