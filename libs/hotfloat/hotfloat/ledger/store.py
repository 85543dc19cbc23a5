"""The validator's durable ledger: every submission and each state change, one SQLite transaction per change.

A change is a compare-and-set from the state the caller saw, so a stage that finishes twice (a crashed run
resumed, a second worker) cannot record twice; a stage's evidence commits in the same transaction as its state.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ..bundle import unpack
from ..errors import HotfloatError, InfrastructureError
from ..record import Record
from .migrations import LEDGER_MIGRATIONS, Migration, SchemaError, check_owned, migrate
from .reads import LedgerReader
from .records import FINAL, NEXT, State, Submission


class LedgerConflict(HotfloatError):
    """A state change raced another writer: the submission is no longer in the state the caller saw."""

    grpc_status = "ABORTED"


class LedgerBusy(InfrastructureError):
    """Another validator process owns this ledger; two runners would do the same work twice."""


class Ledger(LedgerReader):
    """One SQLite database in WAL mode; safe to share between threads of one process and readers in others."""

    def __init__(
        self,
        path: str | os.PathLike,
        migrations: tuple[Migration, ...] = (),
        evidence: Mapping[str, type[Record]] | None = None,
    ):
        """`evidence`: stage -> the record its evidence is (the validator's `EVIDENCE`), so each transition's evidence
        and `evidence()` read back as that record; without it they are JSON objects."""
        self.path = Path(path)
        self._kinds = dict(evidence or {})
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        except sqlite3.DatabaseError as e:
            raise InfrastructureError(f"ledger {self.path}: {e}") from None
        try:
            check_owned(self._conn, LEDGER_MIGRATIONS + tuple(migrations))  # before WAL mode, itself a change
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            migrate(self._conn, LEDGER_MIGRATIONS + tuple(migrations))
        except (sqlite3.DatabaseError, SchemaError) as e:
            self._conn.close()
            raise InfrastructureError(f"ledger {self.path}: {e}") from None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; for other areas' tables in the same database."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Holds the runner lock (released by the kernel if the process dies), so one validator works a ledger."""
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LedgerBusy(f"ledger {self.path} is in use by another validator run") from None
            yield
        finally:
            os.close(fd)

    def receive(self, archive: bytes, *, submitter: str = "", source: str = "") -> tuple[Submission, bool]:
        """Validates and stores an archive as a new submission; an identity already known returns the existing one."""
        bundle = unpack(archive)
        digest = hashlib.sha256(archive).hexdigest()
        now = time.time()
        with self.transaction() as c:
            row = c.execute("SELECT id FROM submissions WHERE identity = ?", (bundle.identity,)).fetchone()
            if row:
                created, sid = False, row[0]
            else:
                c.execute("INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?, ?)", (digest, archive))
                sid = c.execute(
                    "INSERT INTO submissions (identity, bundle_id, submitter, source, state, archive_sha256, created_at,"
                    " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        bundle.identity,
                        bundle.manifest.bundle_id,
                        submitter,
                        source,
                        State.RECEIVED.value,
                        digest,
                        now,
                        now,
                    ),
                ).lastrowid
                c.execute(
                    "INSERT INTO transitions (submission_id, from_state, to_state, reason, at) VALUES (?, NULL, ?, ?, ?)",
                    (sid, State.RECEIVED.value, f"received from {source or 'unknown source'}", now),
                )
                created = True
        return self.get(sid), created

    def begin_attempt(self, sid: int, stage: str, where: str = "") -> int:
        """Records the start of a try at a stage before any work, so a crash during it is known; returns its number.
        `where`: the endpoint it runs on, kept as its reason until it ends, so an interrupted try names it."""
        with self.transaction() as c:
            number = (
                c.execute(
                    "SELECT COUNT(*) FROM attempts WHERE submission_id = ? AND stage = ?", (sid, stage)
                ).fetchone()[0]
                + 1
            )
            c.execute(
                "INSERT INTO attempts (submission_id, stage, number, started_at, reason) VALUES (?, ?, ?, ?, ?)",
                (sid, stage, number, time.time(), f"at {where}" if where else ""),
            )
        return number

    def end_attempt(
        self,
        sid: int,
        stage: str,
        outcome: str,
        reason: str = "",
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """Closes the open try without a state change (a retryable infrastructure fault, or a step done that leaves the
        submission where it is); `also` writes what must commit with it."""
        with self.transaction() as c:
            c.execute(
                "UPDATE attempts SET outcome = ?, reason = ? WHERE submission_id = ? AND stage = ? AND outcome IS NULL",
                (outcome, reason, sid, stage),
            )
            if also is not None:
                also(c)

    def recover(self) -> int:
        """Marks tries left open by a dead process as interrupted; call once when a runner starts. Returns how many."""
        with self.transaction() as c:
            return c.execute(
                "UPDATE attempts SET outcome = 'interrupted', reason = CASE reason WHEN '' THEN '' ELSE"
                " reason || ': ' END || 'the validator stopped during this try' WHERE outcome IS NULL"
            ).rowcount

    def advance(
        self,
        sid: int,
        seen: State,
        to: State,
        reason: str = "",
        evidence: Record | None = None,
        blobs: dict[str, bytes] | None = None,
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> Submission:
        """Moves a submission from `seen` to `to` with its evidence, in one transaction; LedgerConflict if it moved.

        `also` writes what must commit or roll back with the change (e.g. the score and crown tables with SCORED)."""
        _check_edge(seen, to)
        now = time.time()
        payload = None if evidence is None else evidence.model_dump_json()
        with self.transaction() as c:
            changed = c.execute(
                "UPDATE submissions SET state = ?, reason = ?, updated_at = ? WHERE id = ? AND state = ?",
                (to.value, reason, now, sid, seen.value),
            ).rowcount
            if changed != 1:
                raise LedgerConflict(f"submission {sid} is no longer {seen.value}; not recording {to.value} twice")
            for data in (blobs or {}).values():
                c.execute(
                    "INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?, ?)", (hashlib.sha256(data).hexdigest(), data)
                )
            c.execute(
                "INSERT INTO transitions (submission_id, from_state, to_state, reason, evidence, at) VALUES (?, ?, ?, ?, ?, ?)",
                (sid, seen.value, to.value, reason, payload, now),
            )
            if seen in NEXT:
                c.execute(
                    "UPDATE attempts SET outcome = 'done', reason = ? WHERE submission_id = ? AND stage = ? AND outcome IS NULL",
                    (to.value, sid, NEXT[seen][0]),
                )
            if also is not None:
                also(c)
        return self.get(sid)


def _check_edge(seen: State, to: State) -> None:
    """Only the next stage's state or a final failure may follow a state; final states never change."""
    if seen in FINAL:
        raise LedgerConflict(f"{seen.value} is final")
    if to not in (NEXT[seen][1], State.FAILED, State.NO_DECISION):
        raise LedgerConflict(f"{seen.value} -> {to.value} is not a pipeline step")
