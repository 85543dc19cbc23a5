"""Named migrations run once each, in their own transaction, and other areas can add theirs."""

from __future__ import annotations

import sqlite3

import pytest

from hotfloat.ledger import LEDGER_MIGRATIONS, Ledger, Migration, migrate
from hotfloat.ledger.migrations import applied


def test_ledger_migrations_apply_once(tmp_path):
    Ledger(tmp_path / "l.db").close()
    Ledger(tmp_path / "l.db").close()
    conn = sqlite3.connect(tmp_path / "l.db")
    assert applied(conn) == [m.name for m in LEDGER_MIGRATIONS]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_extra_migrations_from_another_area(tmp_path):
    extra = (Migration("chain_0001_journal", ("CREATE TABLE journal (id INTEGER PRIMARY KEY)",)),)
    with Ledger(tmp_path / "l.db", extra) as led:
        with led.transaction() as c:
            c.execute("INSERT INTO journal DEFAULT VALUES")
    conn = sqlite3.connect(tmp_path / "l.db")
    assert applied(conn)[-1] == "chain_0001_journal"


def test_failed_migration_leaves_no_trace(tmp_path):
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    bad = (Migration("0001_half", ("CREATE TABLE a (x)", "CREATE TABLE a (x)")),)
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, bad)
    assert applied(conn) == []
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'a'").fetchone() is None
    assert migrate(conn, (Migration("0001_half", ("CREATE TABLE a (x)",)),)) == ["0001_half"]
