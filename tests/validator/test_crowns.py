"""Crowns: 80/20 between winner and runner-up; a challenger needs the incumbent's fresh score plus 1 point."""

import pytest
from pydantic import ValidationError

from hotfloat.validator import CHALLENGE_MARGIN, Crown, Settled, crown


def s(c, score, status="PASS"):
    return Settled(identity=c * 64, status=status, score=score if status == "PASS" else 0.0, reason="")


def test_fastest_wins_runner_up_second():
    c = crown([s("a", 0.02), s("b", 0.05), s("c", 0.03)])
    assert c.winner == "b" * 64 and c.runner_up == "c" * 64
    assert c.weights == {"b" * 64: 0.8, "c" * 64: 0.2}


def test_lone_winner_leaves_runner_up_share_unassigned():
    c = crown([s("a", 0.02), s("b", 0.0, "FAIL")])
    assert c.weights == {"a" * 64: 0.8} and c.runner_up is None


def test_nobody_passing_means_no_crown():
    assert crown([s("a", 0, "NO_DECISION")]).winner is None


def test_challenger_within_margin_does_not_dethrone():
    c = crown([s("i", 0.040), s("x", 0.040 + CHALLENGE_MARGIN * 0.9)], incumbent="i" * 64)
    assert c.winner == "i" * 64 and c.runner_up == "x" * 64


def test_challenger_at_exactly_the_margin_does_not_dethrone():
    c = crown([s("i", 0.02), s("x", 0.03)], incumbent="i" * 64)
    assert c.winner == "i" * 64


def test_challenger_beyond_margin_wins_and_incumbent_is_runner_up():
    c = crown([s("i", 0.040), s("x", 0.052)], incumbent="i" * 64)
    assert c.winner == "x" * 64 and c.runner_up == "i" * 64


def test_incumbent_that_no_longer_passes_loses_the_crown():
    c = crown([s("i", 0, "FAIL"), s("x", 0.011)], incumbent="i" * 64)
    assert c.winner == "x" * 64


def test_duplicate_settlements_refused():
    with pytest.raises(ValueError):
        crown([s("a", 0.02), s("a", 0.03)])


@pytest.mark.parametrize(
    "weights,why",
    [
        ({"a": float("nan")}, "finite"),
        ({"a": float("inf")}, "finite"),
        ({"a": -0.5}, "greater than or equal to 0"),
        ({"a": 2.0}, "less than or equal to 1"),
        ({"a": 0.8, "b": 0.8}, "more than the whole pool"),
    ],
)
def test_a_crown_read_back_never_hands_out_more_than_its_pool(weights, why):
    with pytest.raises(ValidationError, match=why):
        Crown(winner="a", runner_up="b", weights=weights, reason="")
