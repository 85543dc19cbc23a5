"""What the audit checks on the GPU share (tools/device/audit_check.py and the modules it runs): the results list
and its reporter, the stock kernels, capturing a call in a CUDA graph and timing its replays."""

from __future__ import annotations

import json

import torch

DEV = torch.device("cuda")
results: list[dict] = []


def report(name: str, ok: bool, **info) -> None:
    results.append({"check": name, "ok": bool(ok), **info})
    print(json.dumps(results[-1]), flush=True)


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_fused(x, residual, weight, eps):
    s = x.float() + residual.float()
    return (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype), s.to(x.dtype)


def capture(fn):
    """fn() once eagerly on a side stream (warm-up, as engines do), then captured; returns (graph, static output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def timed(g, n=50) -> float:
    """Median microseconds per replay."""
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000)
    return sorted(times)[n // 2]
