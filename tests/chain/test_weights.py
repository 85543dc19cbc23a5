"""Crowns to weights: each slot's shares (from hotfloat.validator) paid to the identity's owner at its current uid."""

from __future__ import annotations

import pytest

from hotfloat.chain.weights import crown_weights
from hotfloat.validator import Settled, crown

A, B, C, GONE = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)
OWNERS = {A: "hk-a", B: "hk-b", C: "hk-c", GONE: "hk-gone"}
HOTKEYS = ["validator", "hk-a", "hk-b", "hk-c"]


def passed(identity: str, score: float) -> Settled:
    return Settled(identity=identity, status="PASS", score=score, reason="test")


def test_one_slot_pays_winner_and_runner_up_80_20():
    w = crown_weights([crown([passed(A, 0.05), passed(B, 0.02)])], OWNERS, HOTKEYS)
    assert w == pytest.approx({1: 0.8, 2: 0.2})


def test_slots_weigh_the_same():
    crowns = [crown([passed(A, 0.05), passed(B, 0.02)]), crown([passed(C, 0.03)])]
    assert crown_weights(crowns, OWNERS, HOTKEYS) == pytest.approx({1: 0.4, 2: 0.1, 3: 0.4})


def test_the_challenger_margin_comes_from_the_score_area():
    holder_keeps = crown([passed(A, 0.030), passed(B, 0.035)], incumbent=A)
    assert crown_weights([holder_keeps], OWNERS, HOTKEYS) == pytest.approx({1: 0.8, 2: 0.2})


def test_owners_without_a_uid_and_unknown_identities_earn_nothing():
    w = crown_weights([crown([passed(GONE, 0.05), passed(B, 0.02)]), crown([passed("e" * 64, 0.04)])], OWNERS, HOTKEYS)
    assert w == pytest.approx({2: 0.1})
