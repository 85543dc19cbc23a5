"""The ledger's read side: submissions, attempts, transitions and evidence, each row read back as its record.

A row that is not one (edited by hand, written by a newer hotfloat) is a corrupt ledger, never a default; the Ledger
(store.py) opens the database and owns every write.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from ..errors import InfrastructureError, InputError
from ..record import Record, first_error
from .records import NEXT, ORDER, Attempt, State, Submission, Transition

RETRYABLE = ("retry", "interrupted")
R = TypeVar("R", bound=Record)


class LedgerReader:
    """The queries over a Ledger's connection, under its lock."""

    path: Path
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _kinds: dict[str, type[Record]]

    def get(self, sid: int) -> Submission:
        rows = self._select("WHERE id = ?", (sid,))
        if not rows:
            raise InputError(f"ledger has no submission {sid}")
        return rows[0]

    def submissions(self, states: tuple[State, ...] | None = None) -> list[Submission]:
        """All submissions, oldest first, optionally only those in the given states."""
        if states is None:
            return self._select("", ())
        marks = ",".join("?" * len(states))
        return self._select(f"WHERE state IN ({marks})", tuple(s.value for s in states))

    def pending(self, through: State) -> list[Submission]:
        """Submissions with work left before they reach `through` (or a final state), oldest first."""
        todo = ORDER[: ORDER.index(through)]
        return self.submissions(todo)

    def archive(self, sid: int) -> bytes:
        """The stored archive bytes of a submission, checked against their digest."""
        return self.blob(self.get(sid).archive_sha256)

    def blob(self, sha256: str) -> bytes:
        with self._lock:
            row = self._conn.execute("SELECT data FROM blobs WHERE sha256 = ?", (sha256,)).fetchone()
        if row is None or hashlib.sha256(row[0]).hexdigest() != sha256:
            raise InfrastructureError(f"ledger blob {sha256[:16]} is missing or corrupt")
        return row[0]

    def failed_attempts(self, sid: int, stage: str) -> int:
        """Tries at a stage that ended in an infrastructure fault or a crash; bounds retries across restarts."""
        marks = ",".join("?" * len(RETRYABLE))
        with self._lock:
            return self._conn.execute(
                f"SELECT COUNT(*) FROM attempts WHERE submission_id = ? AND stage = ? AND outcome IN ({marks})",
                (sid, stage, *RETRYABLE),
            ).fetchone()[0]

    def attempts(self, sid: int) -> list[Attempt]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT submission_id, stage, number, outcome, reason, started_at FROM attempts WHERE submission_id = ?"
                " ORDER BY started_at, number",
                (sid,),
            ).fetchall()
        return [
            self._row(Attempt, submission_id=r[0], stage=r[1], number=r[2], outcome=r[3], reason=r[4], started_at=r[5])
            for r in rows
        ]

    def transitions(self, sid: int) -> list[Transition]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT submission_id, from_state, to_state, reason, evidence, at FROM transitions"
                " WHERE submission_id = ? ORDER BY id",
                (sid,),
            ).fetchall()
        return [
            self._row(
                Transition,
                submission_id=r[0],
                from_state=r[1],
                to_state=r[2],
                reason=r[3],
                evidence=self._typed(r[1], r[4]),
                at=r[5],
            )
            for r in rows
        ]

    def evidence(self, sid: int, state: State, kind: type[R] | None = None) -> R | None:
        """The evidence recorded when the submission entered `state`, read back as the record it was written as
        (`kind`, by default the ledger's record for the stage that enters `state`, e.g. the build's for BUILT); a row
        that is not one is a corrupt ledger."""
        kind = kind or self._kinds[next(stage for stage, to in NEXT.values() if to is state)]
        with self._lock:
            row = self._conn.execute(
                "SELECT evidence FROM transitions WHERE submission_id = ? AND to_state = ? ORDER BY id LIMIT 1",
                (sid, state.value),
            ).fetchone()
        if row is None or row[0] is None:
            return None
        try:
            return kind.model_validate_json(row[0])
        except ValueError as e:
            raise InfrastructureError(
                f"ledger evidence of submission {sid} at {state.value}: {str(e).splitlines()[0]}"
            ) from None

    def counts(self) -> dict[str, int]:
        """Submissions per state, every state present."""
        with self._lock:
            rows = dict(self._conn.execute("SELECT state, COUNT(*) FROM submissions GROUP BY state").fetchall())
        return {s.value: rows.get(s.value, 0) for s in State}

    def _select(self, where: str, args: tuple) -> list[Submission]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, identity, bundle_id, submitter, source, state, reason, archive_sha256, created_at, updated_at"
                f" FROM submissions {where} ORDER BY id",
                args,
            ).fetchall()
        keys = (
            "id",
            "identity",
            "bundle_id",
            "submitter",
            "source",
            "state",
            "reason",
            "archive_sha256",
            "created_at",
            "updated_at",
        )
        return [self._row(Submission, **dict(zip(keys, r, strict=False))) for r in rows]

    def _typed(self, from_state: str | None, text: str | None) -> Record | str | None:
        """A transition's evidence JSON as the record of the stage that left `from_state`; left as text (a JSON object
        for `_row`) when the ledger has no record for that stage."""
        try:
            kind = self._kinds.get(NEXT[State(from_state)][0]) if from_state and text else None
            return text if kind is None else kind.model_validate_json(text)
        except (ValueError, KeyError) as e:
            raise InfrastructureError(
                f"ledger {self.path}: corrupt transition evidence: {str(e).splitlines()[0]}"
            ) from None

    def _row(self, kind: type[R], **fields) -> R:
        """A row as its record; one that is not (edited by hand, written by a newer hotfloat) is a corrupt ledger."""
        try:
            if isinstance(fields.get("evidence"), str):
                fields["evidence"] = json.loads(fields["evidence"])
            return kind(**fields)
        except ValidationError as e:
            raise InfrastructureError(
                f"ledger {self.path}: corrupt {kind.__name__.lower()} row: {first_error(e)}"
            ) from None
        except (ValueError, RecursionError) as e:  # evidence that is not JSON, or nested past the parser
            raise InfrastructureError(f"ledger {self.path}: corrupt {kind.__name__.lower()} row: {e}") from None
