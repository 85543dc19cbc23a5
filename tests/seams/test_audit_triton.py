"""The audit's CUDA taps (hotfloat.seams.audit_triton) are the host taps' words: their Triton kernels, interpreted
on the CPU, write the same rings bit for bit for every kind and dtype (tests/seams/taps_equal.py), so what the
validator opens on a GPU is what these tests judge on the CPU."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton

from hotfloat.audit.config import ALWAYS, OPTIONAL, AuditConfig
from hotfloat.seams.audit_triton import TritonTaps
from hotfloat.slots import get_slot

KEY = (1 << 62) + 5


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


def _ptype(v) -> str:
    """The argument type Triton's JIT gives a launch argument (do_not_specialize: no value or alignment attributes)."""
    if isinstance(v, torch.Tensor):
        return "*" + {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.int64: "i64"}.get(
            v.dtype, {torch.int32: "i32"}.get(v.dtype, "?")
        )
    if isinstance(v, bool):
        return "i1"
    return "i32" if -(1 << 31) <= v < 1 << 31 else "i64"


def test_every_tap_kernel_compiles_for_sm90_without_a_gpu():
    """The interpreter runs what the JIT compiler would refuse (a plain module global, say): every kernel and variant
    the taps launch is compiled here for sm_90 with the arguments the taps pass, as the GPU's JIT will."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    seen = {}

    def compile_instead(kernel, grid, args, constexprs):
        sig = {name: _ptype(v) for name, v in zip(kernel.arg_names, args, strict=False)}
        sig |= {name: "constexpr" for name in constexprs}
        key = (kernel.__name__, tuple(sorted(sig.items())), tuple(sorted(constexprs.items())))
        if key not in seen:
            got = triton.compile(
                ASTSource(fn=kernel, signature=sig, constexprs=constexprs), target=GPUTarget("cuda", 90, 32)
            )
            seen[key] = got.metadata.name

    taps = TritonTaps(KEY)
    taps.launch = compile_instead
    cfg = AuditConfig(KEY)
    for slot in ALWAYS + OPTIONAL:
        for dtype in get_slot(slot).dtypes:
            taps.warm((slot,), dtype, torch.device("cpu"))
    kernels = {k[0] for k in seen}
    assert kernels == {"rowwise_pre", "rowwise_post", "attn_pre", "attn_post"} and len(seen) >= 14, sorted(seen)
    assert cfg.keep  # the settings the taps run under in qualification
