"""The deployment token: read from a bounded regular file, refused with one line when it is anything else."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hotfloat.errors import InputError
from hotfloat_services.common.auth import load_token


def test_a_token_file_is_read_and_stripped(tmp_path):
    f = tmp_path / "token"
    f.write_text("  hotfloat-test-token-0123456789\n")
    assert load_token(str(f)) == "hotfloat-test-token-0123456789"


@pytest.mark.parametrize("content", [b"short\n", b"\xff\xfe" * 20, b"x" * 5000])
def test_weak_binary_or_oversized_tokens_are_refused(tmp_path, content):
    f = tmp_path / "token"
    f.write_bytes(content)
    with pytest.raises(InputError) as e:
        load_token(str(f))
    assert "\n" not in str(e.value) and ("token" in str(e.value))


def test_a_device_or_fifo_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path / "missing")):
        with pytest.raises(InputError, match="--token-file"):
            load_token(path)


def test_serve_with_a_bad_token_file_exits_with_one_error_line(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "hotfloat.cli",
            "serve",
            "compiler",
            "--socket",
            str(tmp_path / "s.sock"),
            "--token-file",
            "/dev/zero",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --token-file"), p.stderr
