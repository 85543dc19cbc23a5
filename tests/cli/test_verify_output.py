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
