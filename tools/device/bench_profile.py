"""Runs one kernel of the bench a few times so Nsight Compute can profile it: ours (the example's routed config) or a
stock library's, on one (op, T, H) in bf16. tools/device/bench_stock.sh wraps it in `ncu` when NCU_TARGETS is set.

Usage (GPU machine, repo root, after `. tools/device/sglang_env.sh`):
    python3 tools/device/bench_profile.py OP T H IMPL [DEVICE]
OP: silu | rmsnorm | fused; IMPL: ours | sgl_kernel | flashinfer; DEVICE: cuda (default), or cpu with TRITON_INTERPRET=1
for a dry run of a device script's arguments."""

import importlib
import importlib.util
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = {
    "silu": ("examples/silu_triton/kernels/silu_and_mul.py", "silu_and_mul"),
    "rmsnorm": ("examples/rmsnorm_triton/kernels/rmsnorm.py", "rmsnorm"),
    "fused": ("examples/fused_add_rmsnorm_triton/kernels/fused_add_rmsnorm.py", "fused_add_rmsnorm"),
}
LIBRARIES = ("sgl_kernel", "flashinfer")
STOCK = {"silu": ("activation", "silu_and_mul"), "rmsnorm": ("norm", "rmsnorm"), "fused": ("norm", "fused_add_rmsnorm")}


def main(op: str, t: int, h: int, impl: str, device: str = "cuda") -> None:
    if op not in EXAMPLES or impl not in ("ours", *LIBRARIES) or min(t, h) < 1 or device not in ("cuda", "cpu"):
        sys.exit(f"error: bad target {op}:{t}:{h}:{impl} on {device} (see the usage in {__file__})")
    bf = torch.bfloat16
    x = torch.randn(t, 2 * h if op == "silu" else h, device=device, dtype=bf)
    r = torch.randn(t, h, device=device, dtype=bf)
    w = (1 + 0.1 * torch.randn(h, device=device)).to(bf)
    out, rout = torch.empty(t, h, device=device, dtype=bf), torch.empty(t, h, device=device, dtype=bf)
    if impl == "ours":
        path, name = EXAMPLES[op]
        spec = importlib.util.spec_from_file_location("profiled", os.path.join(ROOT, path))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, name)
        run = {
            "silu": lambda: fn(x, out),
            "rmsnorm": lambda: fn(x, w, out, 1e-6),
            "fused": lambda: fn(x, r, w, out, rout, 1e-6),
        }[op]
    else:
        lib = importlib.import_module(impl)
        sub, name = STOCK[op]
        fn = getattr(lib, name, None) or getattr(importlib.import_module(f"{impl}.{sub}"), name)
        run = {"silu": lambda: fn(x), "rmsnorm": lambda: fn(x, w, 1e-6), "fused": lambda: fn(x, r, w, 1e-6)}[op]
    for _ in range(3):
        run()
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"profiled {op} {t}x{h} {impl} on {device}")


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6) or not (sys.argv[2].isdigit() and sys.argv[3].isdigit()):
        sys.exit(f"error: usage: {sys.argv[0]} OP T H IMPL [DEVICE]")
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], *sys.argv[5:])
