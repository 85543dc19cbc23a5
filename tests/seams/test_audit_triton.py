"""The audit's CUDA taps (hotfloat.seams.audit_triton) are the host taps' words: their Triton kernels, interpreted
on the CPU, write the same rings bit for bit for every kind and dtype (tests/seams/taps_equal.py), so what the
validator opens on a GPU is what these tests judge on the CPU."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.seams.audit_triton import TritonTaps


def test_the_triton_taps_write_the_host_taps_words():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    got = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("taps_equal.py"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = got.stdout.strip().splitlines()
    assert got.returncode == 0 and len(lines) == 9 and all(line.endswith(": equal") for line in lines), (
        got.stdout + got.stderr[-2000:]
    )


def test_the_key_must_be_a_64_bit_kernel_argument():
    with pytest.raises(ValueError, match="2\\^32, 2\\^63"):
        TritonTaps(5)
