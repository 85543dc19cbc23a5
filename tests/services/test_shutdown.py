"""SIGTERM stops `hotfloat validator run --follow` promptly, as its own process: nothing new starts, a call in flight
on a live endpoint finishes and is recorded, calls waiting for an endpoint (all of them down) are dropped with
nothing recorded, and the next run finishes the work with every step recorded once.

The qualification services are real, in this process on Unix sockets, their A/B the `stand_in` of 1.5 s; a dead
endpoint is a socket nobody listens on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from hotfloat.ledger import Ledger, State
from hotfloat.validator import Qualified, StageEvidence

from .conftest import STAND_IN_S, admitted

ENTRY = "from hotfloat.cli.main import main; main()"


def _validator(db, sockdir, token_file, qualification, *extra) -> subprocess.Popen:
    """`validator run` on the ledger with every submission already admitted (compiler and admission never dialled)."""
    dial = [a for q in qualification for a in ("--qualification", q)]
    argv = [
        sys.executable,
        "-c",
        ENTRY,
        "validator",
        "run",
        "--ledger",
        str(db),
        "--compiler",
        str(sockdir / "c.sock"),
        "--admission",
        str(sockdir / "a.sock"),
        *dial,
        "--token-file",
        str(token_file),
        "--json",
        *extra,
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _qualifying(led) -> list:
    """Every qualify and score try in the ledger (the stand-in admission's are all done)."""
    return [a for s in led.submissions() for a in led.attempts(s.id) if a.stage in ("qualify", "score")]


def _until(led, proc, done, what, limit=120.0) -> None:
    deadline = time.monotonic() + limit
    while not done(_qualifying(led)):
        assert proc.poll() is None, f"the validator exited before {what}: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, f"the validator never got to {what}"
        time.sleep(0.05)


def _terminate(proc) -> tuple[float, dict, str]:
    """SIGTERM; returns the seconds to exit, the printed counts and stderr."""
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - start
    assert proc.returncode == 0, err[-2000:]
    return took, json.loads(out)["counts"], err


def _scored_once(led) -> None:
    for sub in led.submissions():
        assert sub.state is State.SCORED, sub.reason
        states = [t.to_state for t in led.transitions(sub.id)]
        assert states == [State.RECEIVED, State.SCANNED, State.BUILT, State.ADMITTED, State.QUALIFIED, State.SCORED]
        outcomes = [(a.stage, a.outcome) for a in led.attempts(sub.id)]
        assert outcomes.count(("qualify", "done")) == outcomes.count(("score", "done")) == 1, outcomes
        assert None not in [o for _, o in outcomes] and "interrupted" not in [o for _, o in outcomes], outcomes


def test_sigterm_with_every_endpoint_down_exits_at_once_and_a_restart_finishes(
    stand_in, qualifiers, make_bundle, sockdir, token_file, tmp_path
):
    """Both qualification endpoints are dead: each costs the one try that found it dead, then both submissions wait
    for an endpoint (the 30 s cool-off). SIGTERM: exit 0 within seconds, the waits unrecorded, nothing open; a
    restart with a live endpoint scores both."""
    db, dead = tmp_path / "l.db", [str(sockdir / "q-dead-0.sock"), str(sockdir / "q-dead-1.sock")]
    admitted(db, make_bundle, 2).close()
    proc = _validator(db, sockdir, token_file, dead, "--follow", "--workers", "2")
    with Ledger(db) as led:
        _until(led, proc, lambda tries: sum(a.outcome == "retry" for a in tries) == 2, "a failed try on each endpoint")
        time.sleep(1)  # past the retry's 0.5 s backoff: both submissions now wait for an endpoint
        took, counts, err = _terminate(proc)
        print(f"exited {took:.2f} s after SIGTERM")
        assert took < 5 and counts["admitted"] == 2, (took, counts)
        tries = _qualifying(led)
        assert sorted(a.outcome for a in tries) == ["retry", "retry"]  # none open, none for the abandoned waits
        assert {d for a in tries for d in dead if d in a.reason} == set(dead)
    live = qualifiers(1)[0]
    again = _validator(db, sockdir, token_file, [live.target])
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and json.loads(out)["counts"]["scored"] == 2, err[-2000:]
    assert "interrupted" not in err
    with Ledger(db) as led:
        _scored_once(led)


def test_sigterm_lets_a_call_on_a_live_endpoint_finish_and_starts_nothing_new(
    stand_in, qualifiers, make_bundle, sockdir, token_file, tmp_path
):
    """One live endpoint, one dead, three submissions: SIGTERM while the live one qualifies. That run finishes and
    is recorded (QUALIFIED), its reproduction is not started, the others' waits are dropped; a restart finishes."""
    db, live, dead = tmp_path / "l.db", qualifiers(1)[0].target, str(sockdir / "q-dead.sock")
    admitted(db, make_bundle, 3).close()
    proc = _validator(db, sockdir, token_file, [live, dead], "--follow", "--workers", "3")
    with Ledger(db) as led:
        _until(led, proc, lambda tries: any(a.outcome is None and live in a.reason for a in tries), "a live run")
        took, counts, err = _terminate(proc)
        print(f"exited {took:.2f} s after SIGTERM, the live run ({STAND_IN_S} s) finished first")
        assert took < STAND_IN_S + 5 and counts == {**counts, "admitted": 2, "qualified": 1}, (took, counts)
        tries = _qualifying(led)
        assert [(a.stage, a.outcome) for a in tries if a.outcome != "retry"] == [("qualify", "done")]
        assert all(dead in a.reason for a in tries if a.outcome == "retry"), tries
        ran = next(s for s in led.submissions() if s.state is State.QUALIFIED)
        assert led.evidence(ran.id, State.QUALIFIED, StageEvidence[Qualified]).record.endpoint == live
    again = _validator(db, sockdir, token_file, [live])
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and json.loads(out)["counts"]["scored"] == 3, err[-2000:]
    with Ledger(db) as led:
        _scored_once(led)
