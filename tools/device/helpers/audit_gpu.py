"""The in-engine audit on a GPU (issue 49): the Triton taps write the host taps' words bit for bit (every kind and
dtype, eager and replayed from a CUDA graph), they compile once per kind (no new variant for other sizes, strides
or a misaligned view), and what they cost: a llama-8b-shaped decode step captured as one graph through the router,
and an eager prefill-sized forward, each with the audit off and on, in the same run.

Run on the device through its recipe: bash tools/device/run.sh engine_install:40 audit_gpu:140; prints a table and
writes $OUT/audit_gpu.json."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch

from hotfloat.audit.config import AuditConfig
from hotfloat.audit.kinds import ROWWISE
from hotfloat.audit.layout import layout_for
from hotfloat.seams import arm
from hotfloat.seams.audit import TorchTaps
from hotfloat.seams.audit_ring import Ring
from hotfloat.seams.audit_triton import TritonTaps, attn_post, attn_pre, rowwise_post, rowwise_pre
from hotfloat.slots import get_slot

DEV = torch.device("cuda")
KEY = (1 << 62) + 4242
ROWS = []


def same(a: Ring, b: Ring) -> bool:
    """Two rings hold the same state, rows, MACs and rechecks (the partial sums may split differently)."""
    keep = a.keep
    tags = [[(k["mac"], k["recheck"]) for k in r.entries(KEY)[1]] for r in (a, b)]
    return (
        torch.equal(a.state.cpu(), b.state.cpu())
        and torch.equal(a.head[:keep].cpu(), b.head[:keep].cpu())
        and torch.equal(a.data[:keep].cpu(), b.data[:keep].cpu())
        and tags[0] == tags[1]
    )


def cases():
    """(slot, dims, dtype, scalars, draw(g) -> (inputs, outputs)) on the CPU."""
    out = []
    for dtype, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):

        def r(g, *s, dt=dt):
            return torch.randn(*s, generator=g).to(dt)

        out.append(
            (
                "activation.silu_and_mul",
                {"T": 33, "D": 1024},
                dtype,
                {},
                lambda g, r=r: ({"x": r(g, 33, 2048)}, {"out": r(g, 33, 1024)}),
            )
        )
        out.append(
            (
                "norm.fused_add_rmsnorm",
                {"T": 32, "H": 4096},
                dtype,
                {"eps": 1e-5},
                lambda g, r=r: (
                    {"x": r(g, 32, 4096), "residual": r(g, 32, 4096), "weight": r(g, 4096)},
                    {"out": r(g, 32, 4096), "residual_out": r(g, 32, 4096)},
                ),
            )
        )
        out.append(
            (
                "norm.rmsnorm",
                {"T": 7, "H": 4096},
                dtype,
                {"eps": 1e-5},
                lambda g, r=r: ({"x": r(g, 7, 4096), "weight": r(g, 4096)}, {"out": r(g, 7, 4096)}),
            )
        )
    bf = torch.bfloat16
    for dims in ({"T": 3000, "Hq": 32, "Hkv": 8, "D": 128, "P": 9000, "B": 3, "N": 5000},):

        def prefill(g, dims=dims):
            new = torch.tensor([1000, 1, 1999])
            cached = torch.tensor([500, 0, 1500])
            qo = torch.cat([torch.zeros(1, dtype=torch.int64), new.cumsum(0)])
            kvp = torch.cat([torch.zeros(1, dtype=torch.int64), cached.cumsum(0)]).to(torch.int32)
            t = {k: torch.randn(dims["T"], h, 128, generator=g).to(bf) for k, h in (("q", 32), ("k", 8), ("v", 8))}
            t |= {k: torch.randn(9000, 8, 128, generator=g).to(bf) for k in ("k_buffer", "v_buffer")}
            t |= {"qo_indptr": qo, "kv_indptr": kvp, "kv_indices": torch.randperm(9000, generator=g)[:5000]}
            return t, {"out": torch.randn(dims["T"], 32, 128, generator=g).to(bf)}

        out.append(("attention.prefill", dims, "bf16", {"sm_scale": 0.088}, prefill))

    def decode(g):
        lens = torch.randint(1, 640, (32,), generator=g)
        kvp = torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)]).to(torch.int32)
        t = {"q": torch.randn(32, 32, 128, generator=g).to(bf)}
        t |= {k: torch.randn(30000, 8, 128, generator=g).to(bf) for k in ("k_buffer", "v_buffer")}
        t |= {"kv_indptr": kvp, "kv_indices": torch.randperm(30000, generator=g)[:20480]}
        return t, {"out": torch.randn(32, 32, 128, generator=g).to(bf)}

    out.append(
        (
            "attention.decode",
            {"B": 32, "Hq": 32, "Hkv": 8, "D": 128, "P": 30000, "N": 20480},
            "bf16",
            {"sm_scale": 0.088},
            decode,
        )
    )
    return out


def check_equal(calls: int) -> bool:
    """Eager: the GPU taps against the host taps on CPU copies of the same calls."""
    ok = True
    for slot, dims, dtype, scalars, draw in cases():
        lay = layout_for(get_slot(slot), dims, dtype, scalars, 4, 2048)
        dev, host = TritonTaps(KEY), TorchTaps(KEY)
        a, b = Ring(lay, 3, torch.device("cpu"), *host.parts_for(lay)), Ring(lay, 3, DEV, *dev.parts_for(lay))
        g = torch.Generator().manual_seed(1)
        for _ in range(calls):
            t, o = draw(g)
            host.pre(a, t)
            host.post(a, t, o, True)
            dev.pre(b, {k: v.to(DEV) for k, v in t.items()})
            dev.post(b, {k: v.to(DEV) for k, v in t.items()}, {k: v.to(DEV) for k, v in o.items()}, True)
        got = same(a, b)
        ok &= got
        ROWS.append({"check": "eager taps = host taps", "case": f"{slot} {dtype}", "ok": got})
    return ok


def check_graph(replays: int) -> bool:
    """Captured once, replayed with fresh inputs: the rings equal the host taps run over the same sequence."""
    spec, dims = get_slot("norm.fused_add_rmsnorm"), {"T": 32, "H": 4096}
    lay = layout_for(spec, dims, "bf16", {"eps": 1e-5}, 4, 2048)
    dev, host = TritonTaps(KEY), TorchTaps(KEY)
    a, b = Ring(lay, 4, torch.device("cpu"), *host.parts_for(lay)), Ring(lay, 4, DEV, *dev.parts_for(lay))
    t = {
        k: torch.zeros(s, dtype=torch.bfloat16, device=DEV)
        for k, s in (("x", (32, 4096)), ("residual", (32, 4096)), ("weight", (4096,)))
    }
    o = {k: torch.zeros(32, 4096, dtype=torch.bfloat16, device=DEV) for k in ("out", "residual_out")}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as SGLang does
        dev.warm(("norm.fused_add_rmsnorm",), "bf16", DEV)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dev.pre(b, t)
        o["out"].copy_(t["x"] * 2)
        o["residual_out"].copy_(t["residual"] + 1)
        dev.post(b, t, o, False)
    g = torch.Generator().manual_seed(2)
    for _ in range(replays):
        fresh = {k: torch.randn(v.shape, generator=g).to(torch.bfloat16) for k, v in t.items()}
        for k, v in fresh.items():
            t[k].copy_(v)
        graph.replay()
        host.pre(a, fresh)
        host.post(a, fresh, {"out": fresh["x"] * 2, "residual_out": fresh["residual"] + 1}, False)
    torch.cuda.synchronize()
    got = same(a, b) and int(b.state[0]) == replays
    ROWS.append({"check": "graph replays = host taps", "case": f"fused bf16 x{replays}", "ok": got})
    return got


def check_compiles() -> bool:
    """One compiled variant per kernel and constexpr set: other sizes, strides and a misaligned view add none."""
    before = {f.__name__: _variants(f) for f in (rowwise_pre, rowwise_post, attn_pre, attn_post)}
    router = arm(None, audit=AuditConfig(KEY, keep=2, slots=ROWWISE))
    for t in (5, 37, 1000):
        x = torch.randn(t, 1 + 2 * 3000, device=DEV, dtype=torch.bfloat16)[:, 1:]  # 2 bytes in: misaligned rows
        router.silu_and_mul(x, stock=lambda x: torch.nn.functional.silu(x[:, :3000]) * x[:, 3000:])
    torch.cuda.synchronize()
    after = {f.__name__: _variants(f) for f in (rowwise_pre, rowwise_post, attn_pre, attn_post)}
    ok = all(after[k] - before[k] <= 0 for k in after)
    ROWS.append(
        {"check": "no new compiled variant", "case": json.dumps({k: [before[k], after[k]] for k in after}), "ok": ok}
    )
    return ok


def _variants(fn) -> int:
    """Compiled variants in the kernel's in-memory cache (-1 where this Triton keeps them elsewhere)."""
    try:
        return sum(len(c[0]) for c in fn.device_caches.values())
    except (AttributeError, TypeError, IndexError):
        return -1


def layer_weights(layers, hidden, inter):
    g = torch.Generator(device=DEV).manual_seed(0)
    return [
        [
            torch.randn(i, o, device=DEV, generator=g, dtype=torch.bfloat16) * 0.02
            for i, o in ((hidden, 6144), (4096, hidden), (hidden, 2 * inter), (inter, hidden))
        ]
        for _ in range(layers)
    ]


def forward(router, mats, x, norm_w, eps=1e-5):
    """A llama-shaped forward of the row-wise slots and the GEMMs around them (attention as its projections)."""
    inter = mats[0][3].shape[0]
    res = x
    for qkv, o, gate_up, down in mats:
        h, res = router.fused_add_rmsnorm(x, res, norm_w, eps, stock=_fused)
        x = (h @ qkv)[:, :4096] @ o
        h, res = router.fused_add_rmsnorm(x, res, norm_w, eps, stock=_fused)
        x = (
            router.silu_and_mul(h @ gate_up, stock=lambda a: torch.nn.functional.silu(a[:, :inter]) * a[:, inter:])
            @ down
        )
    return router.rmsnorm(x, norm_w, eps, stock=lambda a, w, e: _fused(a, torch.zeros_like(a), w, e)[0])


def _fused(x, r, w, eps):
    s = x.float() + r.float()
    return (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype), s.to(x.dtype)


def timed(fn, reps: int, inner: int) -> list[float]:
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / inner)
    return out


def cost(quick: bool) -> dict:
    """A decode step (batch 32) as one graph, and an eager prefill-sized forward (4096 tokens), audit off and on;
    off and on alternate so that drift lands on both."""
    layers, hidden, inter = (8 if quick else 32), 4096, 14336
    mats, w = layer_weights(layers, hidden, inter), torch.ones(hidden, device=DEV, dtype=torch.bfloat16)
    results = {}
    for label, tokens, graphed in (
        ("decode step, bs 32, graph", 32, True),
        ("prefill forward, 4096 tokens", 4096, False),
    ):
        runs = {}
        for mode in ("off", "on"):
            router = arm(None, audit=AuditConfig(KEY, keep=4, slots=ROWWISE) if mode == "on" else None)
            x = torch.randn(tokens, hidden, device=DEV, dtype=torch.bfloat16)
            if graphed:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    forward(router, mats, x, w)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    forward(router, mats, x, w)
                runs[mode] = graph.replay
            else:
                forward(router, mats, x, w)
                runs[mode] = lambda router=router, x=x: forward(router, mats, x, w)
        ms = {"off": [], "on": []}
        for _ in range(3 if quick else 7):
            for mode in ("off", "on"):
                ms[mode] += timed(runs[mode], 3, 10 if graphed else 2)
        off, on = statistics.median(ms["off"]), statistics.median(ms["on"])
        spread = statistics.pstdev(ms["off"]) / off
        results[label] = {"off_ms": off, "on_ms": on, "overhead": on / off - 1, "off_spread": spread, "layers": layers}
    return results


def main() -> int:
    quick = "--quick" in sys.argv
    t0 = time.time()
    ok = check_equal(4 if quick else 9) & check_graph(20 if quick else 60) & check_compiles()
    result = {"device": torch.cuda.get_device_name(), "checks": ROWS, "cost": cost(quick), "seconds": time.time() - t0}
    for r in ROWS:
        print(f"{'ok ' if r['ok'] else 'BAD'} {r['check']:28} {r['case']}")
    print(f"device: {result['device']}")
    print(f"{'what':34} {'audit off ms':>12} {'audit on ms':>12} {'overhead':>9} {'off spread':>10}")
    for label, c in result["cost"].items():
        print(f"{label:34} {c['off_ms']:12.3f} {c['on_ms']:12.3f} {c['overhead']:9.2%} {c['off_spread']:10.2%}")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "audit_gpu.json"), "w") as f:
            json.dump(result, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
