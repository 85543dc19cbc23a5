"""The ledger keeps every submission and change exactly once, across threads, processes and crashes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.errors import BundleError, InfrastructureError
from hotfloat.ledger import Ledger, LedgerBusy, LedgerConflict, State
from hotfloat.record import Record


class Scanned(Record):
    """A stage's evidence as a record of its own."""

    ops: int


class Built(Record):
    """Another stage's evidence, which scan evidence is not."""

    arch: str


@pytest.fixture
def archive(make_bundle):
    return pack(load_bundle(make_bundle()))


def test_receive_is_idempotent_per_identity(tmp_path, archive):
    with Ledger(tmp_path / "l.db") as led:
        a, created = led.receive(archive, submitter="hk1", source="test")
        b, again = led.receive(archive, submitter="hk2", source="test")
        assert created and not again and a.id == b.id and b.submitter == "hk1"
        assert a.state is State.RECEIVED and led.archive(a.id) == archive
        assert [t.to_state for t in led.transitions(a.id)] == [State.RECEIVED]


def test_hostile_archive_is_refused_and_nothing_is_stored(tmp_path):
    with Ledger(tmp_path / "l.db") as led:
        with pytest.raises(BundleError):
            led.receive(b"\x1f\x8b not really gzip")
        assert led.submissions() == []


def test_a_row_that_is_not_a_record_is_one_line_of_corrupt_ledger(tmp_path, archive):
    with Ledger(tmp_path / "l.db") as led:
        sub, _ = led.receive(archive)
    conn = sqlite3.connect(tmp_path / "l.db")
    conn.execute("UPDATE submissions SET state = 'quarantined'")
    conn.execute("UPDATE transitions SET evidence = '{not json'")
    conn.commit()
    with Ledger(tmp_path / "l.db") as led:
        with pytest.raises(
            InfrastructureError, match=r"l.db: corrupt submission row: state: Input should be 'received'"
        ):
            led.submissions()
        with pytest.raises(InfrastructureError, match="corrupt transition row: Expecting property name"):
            led.transitions(sub.id)


def test_advance_is_compare_and_set_with_evidence(tmp_path, archive):
    with Ledger(tmp_path / "l.db") as led:
        sub, _ = led.receive(archive)
        led.begin_attempt(sub.id, "scan")
        led.advance(sub.id, State.RECEIVED, State.SCANNED, "clean", Scanned(ops=1))
        with pytest.raises(LedgerConflict):
            led.advance(sub.id, State.RECEIVED, State.SCANNED, "clean")
        with pytest.raises(LedgerConflict, match="not a pipeline step"):
            led.advance(sub.id, State.SCANNED, State.ADMITTED)
        assert led.evidence(sub.id, State.SCANNED, Scanned) == Scanned(ops=1)
        assert led.transitions(sub.id)[-1].evidence == {"ops": 1} and led.evidence(sub.id, State.BUILT, Scanned) is None
        with pytest.raises(InfrastructureError, match="ledger evidence of submission"):
            led.evidence(sub.id, State.SCANNED, Built)
        assert [(a.stage, a.outcome) for a in led.attempts(sub.id)] == [("scan", "done")]
        led.advance(sub.id, State.SCANNED, State.FAILED, "build failed")
        with pytest.raises(LedgerConflict, match="final"):
            led.advance(sub.id, State.FAILED, State.NO_DECISION)


def test_racing_threads_record_a_change_once(tmp_path, archive):
    with Ledger(tmp_path / "l.db") as led:
        sub, _ = led.receive(archive)
        wins, conflicts = [], []

        def race():
            try:
                led.advance(sub.id, State.RECEIVED, State.SCANNED, "clean")
                wins.append(1)
            except LedgerConflict:
                conflicts.append(1)

        threads = [threading.Thread(target=race) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1 and len(conflicts) == 7
        assert [t.to_state for t in led.transitions(sub.id)] == [State.RECEIVED, State.SCANNED]


def test_crash_mid_stage_is_recovered_as_interrupted(tmp_path, archive):
    path = tmp_path / "l.db"
    with Ledger(path) as led:
        sid = led.receive(archive)[0].id
    code = f"from hotfloat.ledger import Ledger; import os; l = Ledger({str(path)!r}); l.begin_attempt({sid}, 'scan'); os._exit(9)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    with Ledger(path) as led:
        assert led.get(sid).state is State.RECEIVED
        assert led.recover() == 1
        assert led.failed_attempts(sid, "scan") == 1
        assert [s.id for s in led.pending(State.ADMITTED)] == [sid]


def test_an_interrupted_try_names_the_endpoint_it_ran_on(tmp_path, archive):
    with Ledger(tmp_path / "l.db") as led:
        sid = led.receive(archive)[0].id
        led.begin_attempt(sid, "qualify", "unix:/run/q3.sock")
        assert led.recover() == 1
        assert [a.reason for a in led.attempts(sid)] == ["at unix:/run/q3.sock: the validator stopped during this try"]


def test_one_runner_per_ledger(tmp_path):
    with Ledger(tmp_path / "l.db") as a, Ledger(tmp_path / "l.db") as b:
        with a.exclusive():
            with pytest.raises(LedgerBusy):
                with b.exclusive():
                    pass
        with b.exclusive():
            pass


def test_pending_and_counts(tmp_path, make_bundle):
    with Ledger(tmp_path / "l.db") as led:
        ids = [led.receive(pack(load_bundle(make_bundle(name=f"b{i}"))))[0].id for i in range(3)]
        led.advance(ids[0], State.RECEIVED, State.NO_DECISION, "device lost")
        led.advance(ids[1], State.RECEIVED, State.SCANNED)
        assert [s.id for s in led.pending(State.SCANNED)] == [ids[2]]
        assert [s.id for s in led.pending(State.ADMITTED)] == ids[1:]
        counts = led.counts()
        assert (counts["received"], counts["scanned"], counts["no_decision"], counts["scored"]) == (1, 1, 1, 0)


def test_corrupt_blob_is_detected(tmp_path, archive):
    with Ledger(tmp_path / "l.db") as led:
        sub, _ = led.receive(archive)
    with sqlite3.connect(tmp_path / "l.db") as raw:
        raw.execute("UPDATE blobs SET data = x'00'")
    with Ledger(tmp_path / "l.db") as led:
        with pytest.raises(Exception, match="missing or corrupt"):
            led.archive(sub.id)
