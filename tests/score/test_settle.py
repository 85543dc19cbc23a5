"""Settlement: two independent passes are required and the lower score is kept."""

import pytest

from hotfloat.score import Attempt, settle

H = "a" * 64


def att(status, score=0.0, identity=H):
    return Attempt(identity=identity, status=status, score=score)


def test_two_passes_keep_the_lower_score():
    s = settle(att("PASS", 0.031), att("PASS", 0.027))
    assert s.status == "PASS" and s.score == pytest.approx(0.027)


def test_one_pass_is_not_enough():
    assert settle(att("PASS", 0.05), att("NO_DECISION")).status == "NO_DECISION"
    assert settle(att("PASS", 0.05), att("NO_DECISION")).score == 0


def test_any_fail_fails():
    assert settle(att("PASS", 0.05), att("FAIL")).status == "FAIL"
    assert settle(att("FAIL"), att("PASS", 0.05)).score == 0


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
