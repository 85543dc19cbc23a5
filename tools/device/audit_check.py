"""Issue 32 on the GPU: the twin's enable flags, the audit's sampled commits, the handicap and the ladder kernels
inside CUDA graphs, and what the audit costs per decode step.

    . tools/device/pyenv.sh; python3 tools/device/audit_check.py [--out DIR]   (tools/device/audit_check.sh)

Checks (each prints one JSON line; exit 1 when any check fails; handicap and cost in audit_cost.py, engine in
audit_engine.py):
- twin: a silu nudge captured while disabled replays as stock, enabled as the stochastic one-ulp nudge, and stock
  again once disabled (the flag is a device tensor the captured kernels read);
- audit: a graph of eight silu calls of the ladder's silu_after_n kernel (exact for its first calls, counting
  replays), replayed with fresh inputs; the captured sites commit a sampled subset of replays, what they kept is
  exactly what the replay computed, and the validator's checker passes the honest executions and fails the later ones;
- handicap: a captured silu with handicap_us=50 replays about 50 us slower per call;
- ladder: every rung captured in a graph replays what it computes eagerly;
- cost: a llama-8b-shaped decode step at batch 32 (32 layers: two fused_add_rmsnorm and one silu_and_mul per
  layer through the router, with the 8B model's projection matmuls) replayed as one graph, audit off and on;
- engine: the transformers worker on CUDA in graph mode answers counts, twin and audit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch
from audit_cost import check_cost, check_handicap
from audit_engine import check_engine
from audit_graph import DEV, capture, report, results, stock_fused, stock_silu

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools/device/ladder"))
import make as ladder  # noqa: E402

from hotfloat.qualify.audit import audit_record  # noqa: E402
from hotfloat.qualify.engines.worker import audit_parts  # noqa: E402
from hotfloat.seams import AuditConfig, arm  # noqa: E402


def check_twin() -> None:
    router = arm(None, twin_of=REPO / "examples/silu_triton")
    x = torch.randn(32, 2 * 14336, device=DEV).to(torch.bfloat16)
    g, y = capture(lambda: router.silu_and_mul(x, stock=stock_silu))
    g.replay()
    want = stock_silu(x)
    off = torch.equal(y, want)
    router.set_twin_slots({"activation.silu_and_mul"})
    g.replay()
    ulps = (y.view(torch.int16).int() - want.view(torch.int16).int()).abs()
    moved = float((ulps != 0).float().mean())
    on = int(ulps.max()) == 1 and 0.2 < moved < 0.3
    router.set_twin_slots(set())
    g.replay()
    report("twin", off and on and torch.equal(y, want), moved=moved, max_ulps=int(ulps.max()))


def check_audit(root: Path) -> None:
    after = 40  # calls: 8 eager warm-up calls, the 8 the capture runs, then 24 in the first three replays
    bundle = ladder.make(root / "ladder_audit", after=after)[9]  # silu_after_n
    router = arm(bundle, audit=AuditConfig(12345, rate=0.5, rows=8))
    x = torch.randn(32, 2 * 4096, device=DEV).to(torch.bfloat16)
    g, outs = capture(lambda: [router.silu_and_mul(x, stock=None) for _ in range(8)])
    sites = len(router.audit.captured)
    kept = []
    for _ in range(200):
        x.copy_(torch.randn_like(x, dtype=torch.float32).to(torch.bfloat16))
        g.replay()
        kept.append((x.clone(), [o.clone() for o in outs]))
    torch.cuda.synchronize()
    entries = router.audit.dump()
    captured = [(h, d) for h, d in entries if h["site"] >= 8]  # sites 0-7 are the eager warm-up calls
    exact = True
    for head, data in captured:  # the entry holds what that replay computed (a capture executes nothing)
        xr, outr = kept[head["execution"] - 1]
        first, n, _ = head["rows"]
        t = head["tensors"]["out"]
        got = torch.frombuffer(bytearray(data[t["offset"] : t["offset"] + n * 4096 * 2]), dtype=torch.bfloat16)
        exact &= torch.equal(got.view(n, 4096).cuda(), outr[head["site"] - 8][first : first + n])
    rec = audit_record(1, "C", audit_parts(entries))
    silu = rec.slots.get("activation.silu_and_mul")
    ok = sites > 0 and captured and exact and silu and silu.calls_failed > 0 and rec.error is None
    report(
        "audit",
        ok,
        captured_sites=sites,
        entries=len(entries),
        captured_entries=len(captured),
        executions=[(h["site"], h["execution"]) for h, _ in captured],
        failed=silu.calls_failed if silu else None,
        worst=silu.worst.describe() if silu else None,
        exact=exact,
    )


def check_ladder(root: Path) -> None:
    bad = []
    for d in ladder.make(root / "ladder", after=10**9):
        router = arm(d)
        x = torch.randn(32, 2 * 4096, device=DEV).to(torch.bfloat16)
        r, w = torch.randn(32, 4096, device=DEV).to(torch.bfloat16), torch.ones(4096, device=DEV, dtype=torch.bfloat16)

        def step():
            a = router.silu_and_mul(x, stock=stock_silu)
            b, c = router.fused_add_rmsnorm(x[:, :4096], r, w, 1e-6, stock=stock_fused)
            return a, b, c

        try:
            g, outs = capture(step)
            x.copy_(torch.randn_like(x, dtype=torch.float32).to(torch.bfloat16))
            g.replay()
            eager = step()
            if not all(torch.equal(a, b) for a, b in zip(outs, eager, strict=False)):
                bad.append(f"{d.name}: replay differs from eager")
        except Exception as e:
            bad.append(f"{d.name}: {type(e).__name__}: {e}"[:300])
    report("ladder", not bad, problems=bad)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for check in (
            check_twin,
            lambda: check_audit(Path(tmp)),
            check_handicap,
            lambda: check_ladder(Path(tmp)),
            check_cost,
            lambda: check_engine(Path(tmp)),
        ):
            try:
                check()
            except Exception as e:
                import traceback

                traceback.print_exc()
                report(getattr(check, "__name__", "check"), False, error=f"{type(e).__name__}: {e}"[:500])
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "audit_check.json").write_text(json.dumps(results, indent=1))
    sys.exit(0 if all(r["ok"] for r in results) else 1)
