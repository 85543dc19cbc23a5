"""The qualification runs the ledger keeps per submission (`runs`, migration 0004_calibration), each with the
calibration its verdict was judged under, so `validator status` names it without reading whole evidence.

Run 1 is the qualify stage's, the rest the score stage's reproductions. A run's row commits in the transaction that
records what it decided; its evidence stays on the transition that holds it, except for a PASS banked while settlement
asks for another reproduction (`bank`): no transition holds that one, so its row keeps it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from ..errors import InfrastructureError
from ..ledger import Ledger
from .evidence import Qualified, Run, StageEvidence


def add_run(
    sid: int, number: int, run: Run, evidence: StageEvidence | None = None
) -> Callable[[sqlite3.Connection], None]:
    """The row of run `number`, for the transaction that records its outcome (`Ledger.advance(also=...)`)."""

    def write(c: sqlite3.Connection) -> None:
        c.execute(
            "INSERT OR REPLACE INTO runs (submission_id, number, run, evidence, at) VALUES (?, ?, ?, ?, ?)",
            (sid, number, run.model_dump_json(), None if evidence is None else evidence.model_dump_json(), time.time()),
        )

    return write


def bank(ledger: Ledger, sid: int, number: int, evidence: StageEvidence[Qualified], reason: str) -> None:
    """A passing reproduction kept while another is needed: its row with its evidence, and the score stage's try
    closed as done, in one transaction (the submission stays QUALIFIED; a restart goes on from the next run)."""
    ledger.end_attempt(sid, "score", "done", reason, also=add_run(sid, number, Run.of(evidence), evidence))


def reproductions(ledger: Ledger, sid: int) -> list[Run]:
    """The runs after the first the ledger holds for a submission, in order."""
    with ledger.transaction() as c:
        rows = c.execute("SELECT run FROM runs WHERE submission_id = ? AND number > 1 ORDER BY number", (sid,))
        return [_run(r[0]) for r in rows.fetchall()]


def latest(ledger: Ledger) -> dict[int, Run]:
    """Submission id -> its last qualification run, for every submission that had one."""
    with ledger.transaction() as c:
        rows = c.execute(
            "SELECT submission_id, run FROM runs r WHERE number = "
            "(SELECT MAX(number) FROM runs WHERE submission_id = r.submission_id)"
        ).fetchall()
    return {sid: _run(text) for sid, text in rows}


def _run(text: str) -> Run:
    try:
        return Run.model_validate_json(text)
    except ValueError as e:  # edited by hand, or written by a newer hotfloat
        raise InfrastructureError(f"corrupt run row in the ledger: {str(e).splitlines()[0]}") from None
