"""Standings in the validator ledger: each scored submission's kept score and each slot set's crown.

A bundle competes with the bundles that replace the same set of slots. Its score row and its slot set's new crown
are written inside the transaction that records it SCORED, so a crash leaves all of them or none, and a resumed run
cannot crown twice; worker threads scoring the same slot set serialise on that transaction. The incumbent is the
slot set's current winner: a challenger must beat its kept score by CHALLENGE_MARGIN to take the crown.
"""

from __future__ import annotations

import json
import sqlite3
import time

from ..bundle import Bundle
from ..ledger import Ledger, State, Submission
from ..verdict import Status
from .crowns import Crown, crown
from .evidence import ScoreEvidence
from .settle import Settled


def slot_set(bundle: Bundle) -> str:
    """The pool a bundle competes in: the slots it replaces, sorted and joined by '+'."""
    return "+".join(sorted({op.slot for op in bundle.manifest.ops}))


def record_scored(
    ledger: Ledger, sub: Submission, settled: Settled, pool: str, reason: str, evidence: ScoreEvidence
) -> Submission:
    """QUALIFIED -> SCORED with the kept score and `pool`'s recomputed crown, in one transaction."""
    if settled.status is not Status.PASS or settled.identity != sub.identity:
        raise ValueError("only a settled PASS of this submission is scored")

    def write(c: sqlite3.Connection) -> None:
        now = time.time()
        c.execute(
            "INSERT INTO scores (submission_id, slot_set, score, at) VALUES (?, ?, ?, ?)",
            (sub.id, pool, settled.score, now),
        )
        rows = c.execute(
            "SELECT s.identity, sc.score FROM scores sc JOIN submissions s ON s.id = sc.submission_id"
            " WHERE sc.slot_set = ?",
            (pool,),
        ).fetchall()
        held = c.execute("SELECT winner FROM crowns WHERE slot_set = ?", (pool,)).fetchone()
        new = crown(
            [Settled(identity=i, status=Status.PASS, score=s, reason="kept score") for i, s in rows],
            incumbent=held[0] if held else None,
        )
        c.execute(
            "INSERT INTO crowns (slot_set, winner, runner_up, weights, reason, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (slot_set) DO UPDATE SET winner = excluded.winner, runner_up = excluded.runner_up,"
            " weights = excluded.weights, reason = excluded.reason, updated_at = excluded.updated_at",
            (pool, new.winner, new.runner_up, json.dumps(new.weights, sort_keys=True), new.reason, now),
        )

    return ledger.advance(sub.id, State.QUALIFIED, State.SCORED, reason, evidence, also=write)


def crowns(ledger: Ledger) -> dict[str, Crown]:
    """Slot set -> its current crown."""
    with ledger.transaction() as c:
        rows = c.execute("SELECT slot_set, winner, runner_up, weights, reason FROM crowns ORDER BY slot_set").fetchall()
    return {s: Crown(winner=w, runner_up=r, weights=json.loads(ws), reason=why) for s, w, r, ws, why in rows}


def scores(ledger: Ledger) -> dict[int, tuple[str, float]]:
    """Submission id -> (slot set, kept score) for every scored submission."""
    with ledger.transaction() as c:
        rows = c.execute("SELECT submission_id, slot_set, score FROM scores").fetchall()
    return {sid: (pool, score) for sid, pool, score in rows}
