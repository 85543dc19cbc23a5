"""Standings in the validator ledger: each scored submission's kept score and each slot set's crown.

A bundle competes with the bundles that replace the same set of slots; a PASS settled provisional (its calibration
misses the validator's target) competes only where the settlement policy crowns such PASSes. Its score row and its
slot set's new crown are written inside the transaction that records it SCORED, so a crash leaves all of them or
none, and a resumed run cannot crown twice; worker threads scoring the same slot set serialise on that transaction.
The incumbent is the slot set's current winner: a challenger must beat its kept score by CHALLENGE_MARGIN to take
the crown.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import NamedTuple

from ..bundle import Bundle
from ..ledger import Ledger, State, Submission
from ..verdict import Status
from .crowns import Crown, crown
from .evidence import ScoreEvidence
from .settle import DEFAULT_SETTLEMENT, SettlementPolicy, Settled


def slot_set(bundle: Bundle) -> str:
    """The pool a bundle competes in: the slots it replaces, sorted and joined by '+'."""
    return "+".join(sorted({op.slot for op in bundle.manifest.ops}))


class Score(NamedTuple):
    """A scored submission's standing: its pool, kept score, and what its PASS is worth."""

    slot_set: str
    score: float
    bound: float
    """The combined false-PASS bound of its runs' calibration records (1: none)."""
    provisional: bool
    """Its bound misses the validator's target (scores from before migration 0004 are provisional: they named none)."""
    calibration: str
    """The records its runs were judged under."""


def record_scored(
    ledger: Ledger,
    sub: Submission,
    settled: Settled,
    pool: str,
    reason: str,
    evidence: ScoreEvidence,
    policy: SettlementPolicy = DEFAULT_SETTLEMENT,
    also: Callable[[sqlite3.Connection], None] | None = None,
) -> Submission:
    """QUALIFIED -> SCORED with the kept score and `pool`'s recomputed crown, in one transaction; a provisional PASS
    competes for the crown only under the `crowned` policy. `also` commits with them (the last run's row)."""
    if settled.status is not Status.PASS or settled.identity != sub.identity:
        raise ValueError("only a settled PASS of this submission is scored")

    def write(c: sqlite3.Connection) -> None:
        now = time.time()
        c.execute(
            "INSERT INTO scores (submission_id, slot_set, score, at, bound, provisional, calibration)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (sub.id, pool, settled.score, now, settled.bound, settled.provisional, settled.calibration),
        )
        rows = c.execute(
            "SELECT s.identity, sc.score, sc.provisional FROM scores sc JOIN submissions s ON s.id = sc.submission_id"
            " WHERE sc.slot_set = ?" + (" AND NOT sc.provisional" if policy.provisional == "held" else ""),
            (pool,),
        ).fetchall()
        held = c.execute("SELECT winner FROM crowns WHERE slot_set = ?", (pool,)).fetchone()
        new = crown(
            [Settled(identity=i, status=Status.PASS, score=s, reason="kept score", provisional=p) for i, s, p in rows],
            incumbent=held[0] if held else None,
        )
        c.execute(
            "INSERT INTO crowns (slot_set, winner, runner_up, weights, reason, updated_at, provisional)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (slot_set) DO UPDATE SET winner = excluded.winner,"
            " runner_up = excluded.runner_up, weights = excluded.weights, reason = excluded.reason,"
            " updated_at = excluded.updated_at, provisional = excluded.provisional",
            (
                pool,
                new.winner,
                new.runner_up,
                json.dumps(new.weights, sort_keys=True),
                new.reason,
                now,
                json.dumps(new.provisional),
            ),
        )
        if also is not None:
            also(c)

    return ledger.advance(sub.id, State.QUALIFIED, State.SCORED, reason, evidence, also=write)


def crowns(ledger: Ledger) -> dict[str, Crown]:
    """Slot set -> its current crown."""
    with ledger.transaction() as c:
        rows = c.execute(
            "SELECT slot_set, winner, runner_up, weights, reason, provisional FROM crowns ORDER BY slot_set"
        ).fetchall()
    return {
        s: Crown(winner=w, runner_up=r, weights=json.loads(ws), reason=why, provisional=json.loads(p))
        for s, w, r, ws, why, p in rows
    }


def scores(ledger: Ledger) -> dict[int, Score]:
    """Submission id -> its standing, for every scored submission."""
    with ledger.transaction() as c:
        rows = c.execute(
            "SELECT submission_id, slot_set, score, bound, provisional, calibration FROM scores"
        ).fetchall()
    return {sid: Score(pool, score, bound, bool(p), cal) for sid, pool, score, bound, p, cal in rows}
