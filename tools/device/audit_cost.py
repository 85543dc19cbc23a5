"""What the audit and the handicap cost inside CUDA graphs (run by tools/device/audit_check.py): a captured silu with
handicap_us=50 replays about 50 us slower per call, and a llama-8b decode step through the router, audit off and on."""

from __future__ import annotations

import torch
from audit_graph import DEV, capture, report, stock_fused, stock_silu, timed

from hotfloat.seams import AuditConfig, arm


def check_handicap() -> None:
    x = torch.randn(32, 2 * 4096, device=DEV).to(torch.bfloat16)
    base = timed(capture(lambda: [arm(None).silu_and_mul(x, stock=stock_silu) for _ in range(10)])[0])
    slow_router = arm(None, handicap_us=50)
    slow = timed(capture(lambda: [slow_router.silu_and_mul(x, stock=stock_silu) for _ in range(10)])[0])
    per_call = (slow - base) / 10
    report("handicap", 40 < per_call < 65, us_per_call=round(per_call, 2))


def check_cost() -> None:
    """A llama-8b decode step at batch 32 through the router, as one graph: audit off against on."""
    layers, hidden, inter, batch = 32, 4096, 14336, 32
    gen = torch.Generator(device=DEV).manual_seed(0)
    mats = [
        [
            torch.randn(i, o, device=DEV, generator=gen, dtype=torch.bfloat16) * 0.02
            for i, o in ((hidden, 6144), (4096, hidden), (hidden, 2 * inter), (inter, hidden))
        ]
        for _ in range(layers)
    ]
    w = torch.ones(hidden, device=DEV, dtype=torch.bfloat16)
    h0 = torch.randn(batch, hidden, device=DEV, dtype=torch.bfloat16)
    out = {}
    for name, audit in (("off", None), ("on", AuditConfig(99, rate=1 / 16, rows=8))):
        router = arm(None, audit=audit)

        def step():
            h, res = h0, torch.zeros_like(h0)
            for qkv, o, gate_up, down in mats:
                x, res = router.fused_add_rmsnorm(h, res, w, 1e-6, stock=stock_fused)
                h = (x @ qkv)[:, :4096] @ o
                x, res = router.fused_add_rmsnorm(h, res, w, 1e-6, stock=stock_fused)
                h = router.silu_and_mul(x @ gate_up, stock=stock_silu) @ down
            return h

        g, _ = capture(step)
        out[name] = timed(g)
        if audit:
            out["audited_sites"] = len(router.audit.captured)
    report(
        "cost",
        True,
        step_us_off=round(out["off"], 1),
        step_us_on=round(out["on"], 1),
        overhead_pct=round(100 * (out["on"] / out["off"] - 1), 3),
        audited_sites=out["audited_sites"],
        seam_calls_per_step=3 * layers,
    )
