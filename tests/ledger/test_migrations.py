"""Named migrations run once each, in their own transaction, and other areas can add theirs."""

from __future__ import annotations

import sqlite3

import pytest

from hotfloat.errors import InfrastructureError
from hotfloat.ledger import LEDGER_MIGRATIONS, Ledger, Migration, migrate
from hotfloat.ledger.migrations import applied

from ..conftest import foreign_sqlite


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


def test_a_newer_schema_of_the_same_area_is_refused_and_another_areas_is_not(tmp_path):
    """A plain ledger does not know the chain's migrations and must still open a ledger that has them; a migration of
    an area it knows but not by name was written by a newer hotfloat, whose rows this one would misread."""
    chain = (Migration("chain_0001_journal", ("CREATE TABLE journal (id INTEGER PRIMARY KEY)",)),)
    Ledger(tmp_path / "l.db", chain).close()
    Ledger(tmp_path / "l.db").close()
    conn = sqlite3.connect(tmp_path / "l.db")
    conn.execute("INSERT INTO schema_migrations VALUES ('chain_0002_newer', 0)")
    conn.commit()
    Ledger(tmp_path / "l.db").close()
    with pytest.raises(InfrastructureError, match=r"migrated by a newer hotfloat \(chain_0002_newer\)"):
        Ledger(tmp_path / "l.db", chain)
    conn.execute("INSERT INTO schema_migrations VALUES ('0099_newer', 0)")
    conn.commit()
    with pytest.raises(InfrastructureError, match=r"l.db: migrated by a newer hotfloat \(0099_newer\); upgrade"):
        Ledger(tmp_path / "l.db")


def test_another_programs_database_is_refused_untouched(tmp_path):
    path = tmp_path / "app.db"
    before = foreign_sqlite(path, "submissions")
    with pytest.raises(
        InfrastructureError, match="SQLite database of another program .tables submissions., not a ledger"
    ):
        Ledger(path)
    assert path.read_bytes() == before and not (tmp_path / "app.db-wal").exists()


def test_a_ledger_scored_before_verdicts_named_their_calibration_reads_its_scores_as_provisional(tmp_path):
    """0004_calibration on a ledger with a score and a crown: the score names no record (bound 1, provisional), so a
    validator holding provisional PASSes drops it at the slot set's next crowning; the crown names no one provisional
    until then."""
    from hotfloat.validator.standings import crowns, scores

    conn = sqlite3.connect(tmp_path / "l.db", isolation_level=None)
    migrate(conn, LEDGER_MIGRATIONS[:3])
    conn.execute("INSERT INTO blobs VALUES ('00', x'00')")
    conn.execute(
        "INSERT INTO submissions (id, identity, bundle_id, submitter, source, state, archive_sha256, created_at,"
        " updated_at) VALUES (1, 'h', 'b', 's', 'x', 'scored', '00', 0, 0)"
    )
    conn.execute("INSERT INTO scores VALUES (1, 'activation.silu_and_mul', 0.02, 0)")
    conn.execute("INSERT INTO crowns VALUES ('activation.silu_and_mul', 'h', NULL, '{\"h\": 0.8}', 'fastest', 0)")
    conn.close()
    with Ledger(tmp_path / "l.db") as led:
        [kept] = scores(led).values()
        assert kept.provisional and kept.bound == 1.0 and kept.calibration.startswith("not recorded: scored before")
        assert crowns(led)["activation.silu_and_mul"].provisional == []
    assert applied(sqlite3.connect(tmp_path / "l.db"))[-1] == "0004_calibration"
