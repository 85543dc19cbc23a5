"""Compiles every kernel variant the audit's CUDA taps launch, for sm_90, without a GPU (tests/seams/
test_audit_triton.py runs it under the tests' Triton and the engine's): the taps' warm-up of every audited slot and
dtype, with each launch compiled instead of run. Prints one line per variant; exits non-zero on the first error."""

import sys

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from hotfloat.audit.kinds import KINDS
from hotfloat.seams.audit_triton import TritonTaps
from hotfloat.slots import get_slot

TYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.int64: "i64", torch.int32: "i32"}


def ptype(v) -> str:
    """The argument type Triton's JIT gives a launch argument (do_not_specialize: no value or alignment attributes)."""
    if isinstance(v, torch.Tensor):
        return "*" + TYPES[v.dtype]
    return "i32" if -(1 << 31) <= v < 1 << 31 else "i64"


def main() -> int:
    seen = set()

    def compile_instead(kernel, grid, args, constexprs):
        sig = {name: ptype(v) for name, v in zip(kernel.arg_names, args, strict=False)}
        sig |= {name: "constexpr" for name in constexprs}
        key = (kernel.__name__, tuple(sorted(sig.items())), tuple(sorted(constexprs.items())))
        if key not in seen:
            got = triton.compile(
                ASTSource(fn=kernel, signature=sig, constexprs=constexprs), target=GPUTarget("cuda", 90, 32)
            )
            seen.add(key)
            print(kernel.__name__, got.metadata.name, sorted(constexprs.items()), flush=True)

    taps = TritonTaps((1 << 62) + 5)
    taps.launch = compile_instead
    for slot in KINDS:
        for dtype in get_slot(slot).dtypes:
            taps.warm((slot,), dtype, torch.device("cpu"))
    print(f"triton {triton.__version__}: {len(seen)} variants", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
