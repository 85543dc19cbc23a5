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


ENGINE_PYTHON = Path(__file__).resolve().parents[2] / ".venv-engine/bin/python"


@pytest.mark.parametrize("python", ["tests' own", "the engine's"])
def test_every_tap_kernel_compiles_for_sm90_without_a_gpu(python):
    """The interpreter runs what the JIT compiler would refuse (a plain module global, an API a Triton release lacks):
    every kernel and variant the taps launch is compiled for sm_90 with the arguments the taps pass, under this
    environment's Triton and under the engine's (the GPU's: SGLang's pin), as the GPU's JIT will."""
    exe = sys.executable if python == "tests' own" else str(ENGINE_PYTHON)
    got = subprocess.run(
        [exe, str(Path(__file__).with_name("taps_compile.py"))], capture_output=True, text=True, timeout=900
    )
    lines = got.stdout.strip().splitlines()
    kernels = {line.split()[0] for line in lines}
    assert got.returncode == 0 and kernels == {"rowwise_pre", "rowwise_post", "attn_pre", "attn_post"}, (
        got.stdout + got.stderr[-3000:]
    )
    assert len(lines) >= 14
