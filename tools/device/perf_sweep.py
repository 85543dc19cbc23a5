"""Device-only sweep for the example Triton kernels: graph-replay time of each kernel at its chosen block shape with
programmatic dependent launch off and on, at the decode and large shapes (bf16), beside the empty-kernel floor (also
off and on) and the copy-bandwidth floor. (The block-shape grid this replaced is recorded in docs/benchmarks.md.)

Run on the GPU machine from the repo root: PYTHONPATH=libs/hotfloat python3 tools/device/perf_sweep.py OUT.json"""

import importlib.util
import json
import math
import sys

import torch
import triton

from hotfloat.bench.ceilings import _copy_us, empty_kernel, l2_bytes
from hotfloat.bench.timing import GRAPH_CALLS, CudaTimer

SHAPES = [(t, h) for h in (2880, 4096, 8192) for t in (1, 8, 32, 128)] + [(1024, 4096), (4096, 8192), (8192, 8192)]


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def sets_for(nbytes):
    return max(2, min(64, math.ceil(3 * l2_bytes() / nbytes)))


def time_calls(timer, calls):
    try:
        g, _ = timer.capture(calls)
        s = timer.replay(g, GRAPH_CALLS, 0.1)
    except Exception as e:  # a launch mode the stack cannot capture is a finding, not the end of the sweep
        print(f"failed: {type(e).__name__}: {e}", flush=True)
        torch.cuda.synchronize()
        return float("nan")
    del g
    return s.median_us


def main(out_path):
    timer = CudaTimer(l2_bytes())
    flag = torch.zeros(1, device="cuda")
    k = empty_kernel()
    floor = {
        pdl: time_calls(timer, [lambda pdl=pdl: k[(1,)](flag, FLAG=False, launch_pdl=pdl)]) for pdl in (False, True)
    }
    copy_bps = 2 * (1 << 30) / (_copy_us(timer, 1 << 30, 0.2) * 1e-6)
    silu = load("examples/silu_triton/kernels/silu_and_mul.py", "silu_mod")
    rms = load("examples/rmsnorm_triton/kernels/rmsnorm.py", "rms_mod")
    results = {"floor_graph_us": floor[False], "floor_graph_pdl_us": floor[True], "copy_Bps": copy_bps, "rows": []}
    print(f"floor {floor[False]:.2f} us (PDL {floor[True]:.2f} us), copy {copy_bps / 1e9:.0f} GB/s", flush=True)
    for t, h in SHAPES:
        xs = [torch.randn(t, 2 * h, device="cuda", dtype=torch.bfloat16) for _ in range(sets_for(6 * t * h))]
        outs = [torch.empty(t, h, device="cuda", dtype=torch.bfloat16) for _ in xs]
        bt, bd, w = silu._config(t, h, True)
        grid = (triton.cdiv(t, bt), triton.cdiv(h, bd))
        for pdl in (False, True):
            calls = [
                lambda x=x, o=o, pdl=pdl: silu._silu_and_mul_kernel[grid](
                    x, o, t, h, x.stride(0), o.stride(0), BLOCK_T=bt, BLOCK_D=bd, PDL=pdl, num_warps=w, launch_pdl=pdl
                )
                for x, o in zip(xs, outs, strict=False)
            ]
            us = time_calls(timer, calls)
            results["rows"].append({"op": "silu", "T": t, "H": h, "config": [bt, bd, w], "pdl": pdl, "us": us})
            print(
                f"silu T={t} D={h} {bt}/{bd}/{w} pdl={pdl}: {us:.2f} us ({us / floor[False]:.2f}x floor, "
                f"{6 * t * h / us / 1e3 / (copy_bps / 1e9):.1%} copy)",
                flush=True,
            )
        del xs, outs
        xs = [torch.randn(t, h, device="cuda", dtype=torch.bfloat16) for _ in range(sets_for(4 * t * h))]
        wt = torch.randn(h, device="cuda", dtype=torch.bfloat16)
        outs = [torch.empty_like(x) for x in xs]
        bt, bh, w = rms._config(t, h, True)
        for pdl in (False, True):
            calls = [
                lambda x=x, o=o, pdl=pdl: rms._rmsnorm_kernel[(triton.cdiv(t, bt),)](
                    x,
                    wt,
                    o,
                    t,
                    h,
                    x.stride(0),
                    o.stride(0),
                    1e-6,
                    BLOCK_T=bt,
                    BLOCK_H=bh,
                    PDL=pdl,
                    num_warps=w,
                    launch_pdl=pdl,
                )
                for x, o in zip(xs, outs, strict=False)
            ]
            us = time_calls(timer, calls)
            results["rows"].append({"op": "rmsnorm", "T": t, "H": h, "config": [bt, bh, w], "pdl": pdl, "us": us})
            print(
                f"rmsnorm T={t} H={h} {bt}/{bh}/{w} pdl={pdl}: {us:.2f} us ({us / floor[False]:.2f}x floor, "
                f"{(4 * t * h + 2 * h) / us / 1e3 / (copy_bps / 1e9):.1%} copy)",
                flush=True,
            )
        del xs, outs
        torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
