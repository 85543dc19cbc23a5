"""`hotfloat verify` for people: one stderr line per row as it finishes (only on a terminal), and a table that fits 80
columns with every FAIL reason printed whole."""

import json
import os
import pty
import subprocess
import sys

from ..conftest import EXAMPLES

ARGS = ["--device", "cpu", "--dtype", "fp32", "--trials", "1", "--seed", "11"]


def verify(bundle, *extra, stderr=subprocess.PIPE):
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "verify", str(bundle), *ARGS, *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=300,
    )


def test_table_fits_80_columns_and_shows_every_reason_whole():
    report = json.loads(verify(EXAMPLES / "silu_broken", "--json").stdout)
    p = verify(EXAMPLES / "silu_broken")
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    flat = " ".join(" ".join(lines).split())
    failed = [r for r in report["rows"] if r["status"] == "FAIL"]
    assert failed
    for row in failed:
        assert " ".join(row["reason"].split()) in flat, row["reason"]
    assert p.stderr == ""  # not a terminal: no progress lines


def test_rows_stream_to_a_terminal_as_they_finish():
    leader, follower = pty.openpty()
    try:
        p = verify(EXAMPLES / "silu_torch", stderr=follower)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO once the child side is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    streamed = [ln for ln in b"".join(chunks).decode().splitlines() if ln.strip()]
    report = json.loads(verify(EXAMPLES / "silu_torch", "--json").stdout)
    assert p.returncode == 0
    assert len(streamed) == len(report["rows"]) and all(
        ln.startswith("PASS activation.silu_and_mul fp32") for ln in streamed
    ), streamed


def test_a_collective_without_ranks_names_the_sandbox_it_did_not_need():
    """A collective verified on one rank is N/A before any child starts: no bounds held, and the head says so rather
    than printing `sandbox=` with nothing after it."""
    p = verify(EXAMPLES / "allreduce_torch")
    assert p.returncode == 4, p.stdout + p.stderr
    [field] = [f for f in p.stdout.split() if f.startswith("sandbox=")]
    assert field != "sandbox=", p.stdout


def test_a_collectives_head_breaks_between_fields_never_inside_one():
    p = verify(EXAMPLES / "allreduce_torch", "--world-size", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert any("world=2 (gloo on cpu)" in line for line in lines), p.stdout
    assert "sandboxed" in p.stdout.split(), p.stdout
    assert max(map(len, lines)) <= 80, max(lines, key=len)


def test_one_mistake_on_every_row_is_printed_once_naming_the_rows():
    """silu_mutates_input writes its input on every call: one reason line for all the rows, not one per row."""
    p = verify(EXAMPLES / "silu_mutates_input")
    rows = len(json.loads(verify(EXAMPLES / "silu_mutates_input", "--json").stdout)["rows"])
    reasons = [line for line in p.stdout.splitlines() if line.startswith("#")]
    assert p.returncode == 1 and rows > 4
    assert reasons == [f"#1-{rows} FAIL: input mutated: x written; inputs must be read-only"], p.stdout
