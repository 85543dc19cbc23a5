"""Device-only variant sweep for the three example kernels (silu_and_mul, rmsnorm, fused_add_rmsnorm): per shape,
the graph-replay time of every config (rows per program, warps, columns per program = bytes per thread, silu's tile
order, the norms' persistent grid vs one program per row block, PDL on/off for the default), timed the way `hotfloat bench` times (64 calls per graph,
rotated input sets: max(2, min(64, ceil(3 x L2 / bytes)))), beside three references measured the same way: the
empty-kernel launch floor (plain and PDL), a one-element load->store round trip through the same input sets (the
latency floor of any kernel that reads its input), and torch's device copy of the same byte count (what a copy reaches
at this size). Compiles run first in a pool of processes (the Triton cache is shared), so the timing phase only loads.
The ops and their configs are in bench_sweep_ops.py, the compile phase in bench_sweep_compile.py.

Run on the GPU machine from the repo root (after `. tools/device/sglang_env.sh`):
    python3 tools/device/bench_sweep.py OUT_DIR
Writes OUT_DIR/sweep.jsonl (one line per measurement) and prints, per op and shape, the default config, the winner and
the references; SWEEP_DEADLINE (s, default 80) bounds the timing phase, SWEEP_OPS (comma list) picks ops."""

import json
import math
import os
import sys
import time

import torch
import triton
import triton.language as tl
from bench_sweep_compile import precompile
from bench_sweep_ops import OPS, ROOT, call, configs, error, load, make
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def _empty(ptr, FLAG: tl.constexpr):
    if FLAG:
        tl.store(ptr, 0)


@triton.jit
def _round_trip(x_ptr, out_ptr, PDL: tl.constexpr):
    """One dependent load and one store: launch + memory latency, the floor of any kernel that reads its input."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    tl.store(out_ptr + tl.arange(0, 8), tl.load(x_ptr + tl.arange(0, 8)))


def main(out_dir):
    sys.path.insert(0, os.path.join(ROOT, "libs", "hotfloat"))
    from hotfloat.bench.ceilings import l2_bytes
    from hotfloat.bench.timing import GRAPH_CALLS, CudaTimer

    ops = [o for o in os.environ.get("SWEEP_OPS", "silu,rmsnorm,fused").split(",") if o]
    budget = float(os.environ.get("SWEEP_DEADLINE", "80"))
    mods = {n: load(n) for n in ops}
    jobs = {
        (n, 4096 if n == "silu" else triton.next_power_of_2(h), cfg, pdl)
        for n in ops
        for t, h in OPS[n]["shapes"]
        for _, cfg, pdl in configs(n, mods[n], t, h)
    }
    if os.environ.get("SWEEP_PRECOMPILE", "1") == "1":
        precompile(sorted(jobs))
    if budget <= 0:
        return
    timer, l2 = CudaTimer(l2_bytes()), l2_bytes()

    def graph_us(calls, before=None):
        try:
            g, _ = timer.capture(calls)
            us = timer.replay(g, GRAPH_CALLS, 0.03, before).median_us
            del g
            return us
        except Exception as e:  # a config the stack cannot run or capture is a finding, not the end of the sweep
            torch.cuda.synchronize()
            print(f"  failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
            return float("nan")

    flag = torch.zeros(1, device="cuda")
    floor = {p: graph_us([lambda p=p: _empty[(1,)](flag, FLAG=False, launch_pdl=p)]) for p in (False, True)}
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    copy_bps = 2 * src.numel() / timer.cold([lambda: dst.copy_(src)], 0.2)[0].median_us * 1e6
    src = dst = None  # frees the 2 GiB before the sweep
    head = {"floor_us": floor[False], "floor_pdl_us": floor[True], "copy_Bps": copy_bps}
    print(f"floor {floor[False]:.3f} us, PDL floor {floor[True]:.3f} us, copy {copy_bps / 1e12:.2f} TB/s", flush=True)
    log = open(os.path.join(out_dir, "sweep.jsonl"), "w")
    log.write(json.dumps(head) + "\n")
    summary, deadline = [], time.time() + budget
    # Most informative first, so a short deadline still covers every op: 128-256 tokens (the rows furthest from
    # copy bandwidth), then decode, then the large shapes.
    order = sorted(
        ((n, t, h) for n in ops for t, h in OPS[n]["shapes"]),
        key=lambda e: (0 if e[1] in (128, 256) else 1 if e[1] <= 32 else 2, e[2], e[1], ops.index(e[0])),
    )
    for name, t, h in order:
        mod = mods[name]
        if time.time() > deadline:
            print(f"deadline: {name} {t}x{h} and later shapes not timed", flush=True)
            break
        first, nbytes = make(name, t, h)
        sets = [first] + [make(name, t, h)[0] for _ in range(max(2, min(64, math.ceil(3 * l2 / nbytes))) - 1)]
        rec = {"op": name, "T": t, "H": h, "bytes": nbytes, "sets": len(sets)}
        rec["round_trip_us"] = graph_us(
            [lambda s=s: _round_trip[(1,)](s["x"], s["out"], PDL=True, launch_pdl=True) for s in sets]
        )
        half = [
            (
                torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"),
                torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"),
            )
            for _ in sets
        ]
        rec["copy_same_bytes_us"] = graph_us([lambda a=a, b=b: b.copy_(a) for a, b in half])
        del half
        rec["variants"] = {}
        for label, cfg, pdl in configs(name, mod, t, h):
            for k in ("out", "rout"):
                if k in sets[0]:
                    sets[0][k].fill_(float("nan"))
            try:
                call(mod, name, sets[0], cfg, pdl)
                err = error(name, sets[0])
            except Exception as e:  # a config that cannot compile or launch (registers, shared memory) loses
                torch.cuda.synchronize()
                rec["variants"][label] = {"cfg": list(cfg), "pdl": pdl, "us": None, "ok": False, "why": str(e)[:200]}
                continue
            us = graph_us([lambda s=s: call(mod, name, s, cfg, pdl) for s in sets])
            ok = err == err and err < 0.02
            rec["variants"][label] = {"cfg": list(cfg), "pdl": pdl, "us": us, "err": err, "ok": ok}
        log.write(json.dumps(rec) + "\n")
        log.flush()
        good = {k: v["us"] for k, v in rec["variants"].items() if v["ok"] and v["us"] == v["us"]}
        nopdl = rec["variants"].get("default-nopdl", {}).get("us") or float("nan")
        best = min(good, key=good.get) if good else "-"
        d = rec["variants"]["default"].get("us") or float("nan")
        b = good.get(best, float("nan"))
        line = (
            f"{name:7} {t:5}x{h:<5} default {d:7.2f} | best {best:14} {b:7.2f} ({b / floor[False]:5.2f}x floor, "
            f"{nbytes / b / 1e6 / (copy_bps / 1e12):6.1%} copy) | nopdl {nopdl:7.2f}"
            f" | round trip {rec['round_trip_us']:5.2f} | copy same bytes {rec['copy_same_bytes_us']:7.2f} "
            f"({nbytes / rec['copy_same_bytes_us'] / 1e6 / (copy_bps / 1e12):6.1%})"
        )
        print(line, flush=True)
        summary.append(line)
        del sets, first
        torch.cuda.empty_cache()
    log.close()
    with open(os.path.join(out_dir, "sweep.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
