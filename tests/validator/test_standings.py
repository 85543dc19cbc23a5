"""Standings in the ledger: SCORED, the kept score and the slot set's crown commit together, once, per slot set."""

from __future__ import annotations

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.ledger import ORDER, Ledger, LedgerConflict, State
from hotfloat.validator import CHALLENGE_MARGIN, ScoreEvidence, Settled
from hotfloat.validator.standings import crowns, record_scored, scores, slot_set

SILU, NORM = "activation.silu_and_mul", "norm.rmsnorm"
TWO_SLOTS = """\
bundle_id = "both"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "norm.rmsnorm"
source = "kernels/k.py"
entry = "run"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
"""


@pytest.fixture
def qualified(make_bundle, tmp_path):
    """qualify(name, slot) -> (submission at QUALIFIED, its slot set), moved there through the ledger's own steps."""
    led = Ledger(tmp_path / "l.db")

    def qualify(name: str, slot: str = SILU, manifest: str | None = None):
        bundle = load_bundle(make_bundle(name=name, slot=slot, manifest=manifest))
        sub, _ = led.receive(pack(bundle))
        steps = ORDER[: ORDER.index(State.QUALIFIED) + 1]
        for seen, to in zip(steps, steps[1:], strict=False):
            sub = led.advance(sub.id, seen, to, "test step")
        return sub, slot_set(bundle)

    yield led, qualify
    led.close()


def score(led, sub, pool, value, record):
    settled = Settled(identity=sub.identity, status="PASS", score=value, reason="reproduced")
    evidence = ScoreEvidence(status="PASS", reasons=[], record=record, runs=[], settled=settled, slot_set=pool)
    return record_scored(led, sub, settled, pool, settled.reason, evidence)


def test_slot_set_is_the_sorted_slots_a_bundle_replaces(qualified):
    _, qualify = qualified
    assert qualify("both", manifest=TWO_SLOTS)[1] == f"{SILU}+{NORM}"


def test_each_slot_set_keeps_its_own_crown_and_the_margin_protects_the_incumbent(qualified, qualified_record):
    led, qualify = qualified
    (a, pool), (b, _), (c, _), (n, other) = (qualify("a"), qualify("b"), qualify("c"), qualify("n", NORM))
    score(led, a, pool, 0.30, qualified_record())
    score(led, n, other, 0.05, qualified_record())
    assert crowns(led)[pool].weights == {a.identity: 0.8} and crowns(led)[other].weights == {n.identity: 0.8}
    score(
        led, b, pool, 0.30 + CHALLENGE_MARGIN / 2, qualified_record()
    )  # faster, but not by the margin: the incumbent defends
    assert (crowns(led)[pool].winner, crowns(led)[pool].runner_up) == (a.identity, b.identity)
    score(led, c, pool, 0.30 + 2 * CHALLENGE_MARGIN, qualified_record())  # beats the incumbent by more than the margin
    assert crowns(led)[pool].weights == {c.identity: 0.8, b.identity: 0.2}
    assert crowns(led)[other].weights == {n.identity: 0.8}
    assert {sid: (s.slot_set, s.score) for sid, s in scores(led).items()} == {
        a.id: (pool, 0.30),
        n.id: (other, 0.05),
        b.id: (pool, 0.30 + CHALLENGE_MARGIN / 2),
        c.id: (pool, 0.30 + 2 * CHALLENGE_MARGIN),
    }
    assert led.get(c.id).state is State.SCORED and led.evidence(c.id, State.SCORED, ScoreEvidence).settled.score == 0.32


def test_a_submission_is_scored_once_and_a_refused_score_writes_nothing(qualified, qualified_record):
    led, qualify = qualified
    (a, pool), (b, _) = qualify("a"), qualify("b")
    score(led, a, pool, 0.2, qualified_record())
    with pytest.raises(LedgerConflict):
        score(led, a, pool, 0.9, qualified_record())  # a resumed run that scores again changes nothing
    assert scores(led)[a.id][:2] == (pool, 0.2) and list(scores(led)) == [a.id]
    assert crowns(led)[pool].winner == a.identity
    with pytest.raises(ValueError, match="settled PASS of this submission"):
        record_scored(
            led,
            b,
            Settled(identity=a.identity, status="PASS", score=0.5, reason=""),
            pool,
            "",
            ScoreEvidence(status="PASS", reasons=[], record=qualified_record(), runs=[]),
        )
    assert led.get(b.id).state is State.QUALIFIED and list(scores(led)) == [a.id]
