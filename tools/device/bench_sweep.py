"""Device-only variant sweep for the three example kernels (silu_and_mul, rmsnorm, fused_add_rmsnorm): per shape,
the graph-replay time of every config (rows per program, warps, columns per program = bytes per thread, silu's tile
order, the norms' persistent grid vs one program per row block, PDL on/off for the default), timed the way `hotfloat bench` times (64 calls per graph,
rotated input sets: max(2, min(64, ceil(3 x L2 / bytes)))), beside three references measured the same way: the
empty-kernel launch floor (plain and PDL), a one-element load->store round trip through the same input sets (the
latency floor of any kernel that reads its input), and torch's device copy of the same byte count (what a copy reaches
at this size). Compiles run first in a pool of processes (the Triton cache is shared), so the timing phase only loads.

Run on the GPU machine from the repo root (after `. tools/device/sglang_env.sh`):
    python3 tools/device/bench_sweep.py OUT_DIR
Writes OUT_DIR/sweep.jsonl (one line per measurement) and prints, per op and shape, the default config, the winner and
the references; SWEEP_DEADLINE (s, default 80) bounds the timing phase, SWEEP_OPS (comma list) picks ops."""

import concurrent.futures as cf
import importlib.util
import json
import math
import multiprocessing as mp
import os
import sys
import time

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SM = 132
DECODE = [(t, h) for h in (2880, 4096, 8192) for t in (1, 8, 32, 128)]
OPS = {
    "silu": {
        "path": "examples/silu_triton/kernels/silu_and_mul.py",
        "shapes": DECODE + [(1024, 4096), (4096, 8192), (8192, 8192)],
        # (BLOCK_T, BLOCK_D, warps, 1-D memory-order grid)
        "variants": [
            (1, 256, 1, 0),
            (1, 256, 2, 0),
            (1, 512, 2, 0),
            (1, 512, 4, 0),
            (1, 1024, 4, 0),
            (1, 1024, 8, 0),
            (1, 2048, 8, 0),
            (2, 1024, 8, 0),
            (2, 2048, 16, 0),
            (1, 4096, 8, 0),
            (1, 4096, 16, 0),
            (1, 4096, 16, 1),
            (1, 2048, 8, 1),
            (1, 1024, 8, 1),
        ],
    },
    "rmsnorm": {
        "path": "examples/rmsnorm_triton/kernels/rmsnorm.py",
        "shapes": DECODE + [(1024, 4096), (4096, 8192), (8192, 8192)],
        "variants": [
            (1, 1, 0),
            (1, 2, 0),
            (1, 4, 0),
            (1, 8, 0),
            (1, 16, 0),
            (2, 4, 0),
            (2, 8, 0),
            (4, 8, 0),
            (4, 16, 0),
            (1, 4, 4 * SM),
            (1, 8, 2 * SM),
            (2, 8, 2 * SM),
        ],
    },
    "fused": {
        "path": "examples/fused_add_rmsnorm_triton/kernels/fused_add_rmsnorm.py",
        "shapes": sorted(
            {(t, h) for h in (896, 1536, 4096, 8192) for t in (1, 8, 32, 128, 256)}
            | set(DECODE)
            | {(4096, 4096), (8192, 8192)},
            key=lambda s: (s[1], s[0]),
        ),
        "variants": [
            (1, 1, 0),
            (1, 2, 0),
            (1, 4, 0),
            (1, 8, 0),
            (1, 16, 0),
            (2, 4, 0),
            (2, 8, 0),
            (4, 8, 0),
            (4, 16, 0),
            (1, 4, 4 * SM),
            (1, 8, 2 * SM),
            (2, 8, 2 * SM),
        ],
    },
}


def load(name):
    spec = importlib.util.spec_from_file_location(f"sweep_{name}", os.path.join(ROOT, OPS[name]["path"]))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def make(name, t, h, dev="cuda"):
    """Inputs and poisoned outputs of one call; bytes that must move."""
    bf = torch.bfloat16
    if name == "silu":
        return {
            "x": torch.randn(t, 2 * h, device=dev, dtype=bf),
            "out": torch.full((t, h), float("nan"), device=dev, dtype=bf),
        }, 6 * t * h
    d = {
        "x": torch.randn(t, h, device=dev, dtype=bf),
        "w": (1 + 0.1 * torch.randn(h, device=dev)).to(bf),
        "out": torch.full((t, h), float("nan"), device=dev, dtype=bf),
    }
    if name == "rmsnorm":
        return d, (4 * t * h + 2 * h)
    d |= {"r": torch.randn(t, h, device=dev, dtype=bf), "rout": torch.full((t, h), float("nan"), device=dev, dtype=bf)}
    return d, (8 * t * h + 2 * h)


def call(mod, name, s, cfg, pdl):
    if name == "silu":
        mod.launch(s["x"], s["out"], cfg, pdl)
    elif name == "rmsnorm":
        mod.launch(s["x"], s["w"], s["out"], 1e-6, cfg, pdl)
    else:
        mod.launch(s["x"], s["r"], s["w"], s["out"], s["rout"], 1e-6, cfg, pdl)


def error(name, s):
    """Max relative error (max |out - ref| / max |ref|) of the set's outputs against torch in fp32: a broken config
    must not win; bf16 rounding alone stays under 0.4% (0.8% where the interpreter truncates)."""
    x = s["x"].float()
    pairs = []
    if name == "silu":
        h = x.shape[1] // 2
        pairs.append((s["out"], torch.nn.functional.silu(x[:, :h]) * x[:, h:]))
    else:
        if name == "fused":
            x = x + s["r"].float()
            pairs.append((s["rout"], x))
        pairs.append((s["out"], x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * s["w"].float()))
    return max(((o.float() - r).abs().max() / r.abs().max()).item() for o, r in pairs)


def configs(name, mod, t, h):
    """(label, cfg, pdl) to time at one shape: every variant with PDL, and the example's default config with and
    without PDL."""
    default = tuple(mod._config(t, h, True))
    out, seen = [("default", default, True), ("default-nopdl", default, False)], {_effective(name, t, h, default)}
    for v in map(tuple, OPS[name]["variants"]):
        key = _effective(name, t, h, v)
        if key not in seen:  # a persistent grid at least as large as the work is the plain launch: time it once
            seen.add(key)
            out.append(("/".join(map(str, v)), v, True))
    return out


def _effective(name, t, h, cfg):
    """The launch a config makes at this shape: the persistent grid size drops out when it covers every tile."""
    if name == "silu":
        return tuple(map(int, cfg))
    bt, w, p = cfg
    return bt, w, p if 0 < p < math.ceil(t / bt) else 0


class _Warmup:
    """Stands in for a Triton kernel in a compile worker: `kernel[grid](...)` compiles (into the shared cache) and
    launches nothing, so workers never put kernels on a GPU that another process is timing."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.kernel.warmup(*args, grid=grid, **kwargs)


KERNELS = {"silu": "_silu_and_mul_kernel", "rmsnorm": "_rmsnorm_kernel", "fused": "_fused_kernel"}


def compile_job(name, h, cfg, pdl):
    """Compiles one config in a worker process on empty (unlaunched) inputs, filling the shared Triton cache."""
    mod = load(name)
    setattr(mod, KERNELS[name], _Warmup(getattr(mod, KERNELS[name])))
    bf = torch.bfloat16
    s = {
        "x": torch.empty(3, 2 * h if name == "silu" else h, device="cuda", dtype=bf),
        "w": torch.empty(h, device="cuda", dtype=bf),
        "r": torch.empty(3, h, device="cuda", dtype=bf),
        "out": torch.empty(3, h, device="cuda", dtype=bf),
        "rout": torch.empty(3, h, device="cuda", dtype=bf),
    }
    call(mod, name, s, cfg, pdl)
    return name, h, cfg


def precompile(jobs):
    start = time.time()
    workers = int(os.environ.get("SWEEP_WORKERS", min(12, os.cpu_count() or 4)))
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(compile_job, *j) for j in jobs]
        failed = 0
        for f in cf.as_completed(futures):
            try:
                f.result()
            except Exception as e:  # reported; the timing phase then compiles (or fails) that config itself
                failed += 1
                print(f"precompile failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
    print(f"precompiled {len(jobs)} configs in {time.time() - start:.1f}s ({failed} failed)", flush=True)


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
