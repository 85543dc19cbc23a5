"""Named, transactional schema migrations: each applies with its bookkeeping row in one transaction, exactly once.

Other areas (e.g. the chain's publication journal) add tables to the same database by passing their own list.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass


class SchemaError(Exception):
    """The database is not one these migrations may change: another program's, or migrated by a newer hotfloat."""


@dataclass(frozen=True)
class Migration:
    """A named schema change; names are permanent, so a renamed migration would run twice. A name is its area's
    prefix (none for the ledger's own, `chain_` for the chain's), then a sequence number, then words."""

    name: str
    statements: tuple[str, ...]


LEDGER_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_submissions",
        (
            """CREATE TABLE blobs (
            sha256 TEXT PRIMARY KEY,
            data BLOB NOT NULL)""",
            """CREATE TABLE submissions (
            id INTEGER PRIMARY KEY,
            identity TEXT NOT NULL UNIQUE,
            bundle_id TEXT NOT NULL,
            submitter TEXT NOT NULL,
            source TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            archive_sha256 TEXT NOT NULL REFERENCES blobs(sha256),
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL)""",
            "CREATE INDEX submissions_state ON submissions(state)",
            """CREATE TABLE transitions (
            id INTEGER PRIMARY KEY,
            submission_id INTEGER NOT NULL REFERENCES submissions(id),
            from_state TEXT,
            to_state TEXT NOT NULL,
            reason TEXT NOT NULL,
            evidence TEXT,
            at REAL NOT NULL,
            UNIQUE (submission_id, to_state))""",
        ),
    ),
    Migration(
        "0002_attempts",
        (
            """CREATE TABLE attempts (
            submission_id INTEGER NOT NULL REFERENCES submissions(id),
            stage TEXT NOT NULL,
            number INTEGER NOT NULL,
            outcome TEXT,
            reason TEXT NOT NULL DEFAULT '',
            started_at REAL NOT NULL,
            PRIMARY KEY (submission_id, stage, number))""",
        ),
    ),
    Migration(
        "0003_scores",
        (
            """CREATE TABLE scores (
            submission_id INTEGER PRIMARY KEY REFERENCES submissions(id),
            slot_set TEXT NOT NULL,
            score REAL NOT NULL,
            at REAL NOT NULL)""",
            "CREATE INDEX scores_slot_set ON scores(slot_set)",
            """CREATE TABLE crowns (
            slot_set TEXT PRIMARY KEY,
            winner TEXT,
            runner_up TEXT,
            weights TEXT NOT NULL,
            reason TEXT NOT NULL,
            updated_at REAL NOT NULL)""",
        ),
    ),
    Migration(
        # every verdict names the calibration record it was judged under (issue 50): each qualification run is kept
        # with it (a reproduction banked while more are needed keeps its evidence here, no transition holds it); a
        # score keeps its combined false-PASS bound, and scores from before say they name no record
        "0004_calibration",
        (
            """CREATE TABLE runs (
            submission_id INTEGER NOT NULL REFERENCES submissions(id),
            number INTEGER NOT NULL,
            run TEXT NOT NULL,
            evidence TEXT,
            at REAL NOT NULL,
            PRIMARY KEY (submission_id, number))""",
            "ALTER TABLE scores ADD COLUMN bound REAL NOT NULL DEFAULT 1.0",
            "ALTER TABLE scores ADD COLUMN provisional INTEGER NOT NULL DEFAULT 1",
            "ALTER TABLE scores ADD COLUMN calibration TEXT NOT NULL DEFAULT"
            " 'not recorded: scored before verdicts named their calibration'",
            "ALTER TABLE crowns ADD COLUMN provisional TEXT NOT NULL DEFAULT '[]'",
        ),
    ),
)


def applied(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations already applied, in order."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]


def check_owned(conn: sqlite3.Connection, migrations: tuple[Migration, ...]) -> None:
    """Refuses, before anything is written, a database with tables but no migration bookkeeping (another program's
    file) and one holding migrations of these areas that these do not know (a newer hotfloat's schema, whose rows
    this version would misread or whose constraints it would break)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return
    if "schema_migrations" not in tables:
        raise SchemaError(
            f"an SQLite database of another program (tables {', '.join(sorted(tables)[:5])}), not a ledger"
        )
    known = {m.name for m in migrations}
    areas = {_area(n) for n in known}
    newer = [
        r[0]
        for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")
        if _area(r[0]) in areas and r[0] not in known
    ]
    if newer:
        raise SchemaError(f"migrated by a newer hotfloat ({', '.join(newer[:5])}); upgrade hotfloat to open it")


def _area(name: str) -> str:
    return re.match(r"\D*", name).group()


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...]) -> list[str]:
    """Applies each missing migration in its own transaction (autocommit connection); returns the names applied."""
    done = set(applied(conn))
    ran = []
    for m in migrations:
        if m.name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (m.name,)).fetchone():
                conn.execute("ROLLBACK")  # another process applied it between our read and our lock
                continue
            for sql in m.statements:
                conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (m.name, time.time()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        ran.append(m.name)
    return ran
