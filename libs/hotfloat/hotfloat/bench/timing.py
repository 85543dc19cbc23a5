"""Timing loops that are hard to fool: L2 flushed before cold calls, inputs rotated, graph replays for decode-sized calls,
repetitions until the relative standard error is under 1% or the time budget is spent."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

import torch

from .records import Stat

RSE_TARGET = 0.01
SPIN_CYCLES = 200_000
"""GPU-side wait (~0.1 ms) queued before each cold call, so the host has enqueued the call before its start event
fires: without it, the host's launch latency (10-30 us for a Python launcher) would be timed as kernel time."""
GRAPH_CALLS = 64
"""Calls captured back to back in one graph: enough that the per-replay launch cost is spread thin."""

Call = Callable[[], object]
Prepare = Callable[[int], None]
"""Refills call i's private copies of the inputs it overwrites; runs before that call, outside its timed region."""


def stat(samples_us: Sequence[float]) -> Stat:
    """Median, quartiles and relative standard error of per-call times."""
    xs = sorted(samples_us)
    n = len(xs)
    mean = statistics.fmean(xs)
    rse = statistics.stdev(xs) / math.sqrt(n) / mean if n > 1 and mean > 0 else 1.0
    q = statistics.quantiles(xs, n=4) if n > 1 else [xs[0]] * 3
    return Stat(median_us=statistics.median(xs), q1_us=q[0], q3_us=q[2], rse=rse, n=n)


def repeat(measure: Callable[[int], list[float]], budget_s: float, batch: int, min_n: int, max_n: int = 5000) -> Stat:
    """Calls measure(batch) until enough samples agree (RSE < 1%) or the budget ends; always takes at least min_n."""
    samples: list[float] = []
    start = time.perf_counter()
    while True:
        samples += measure(batch)
        s = stat(samples)
        enough = len(samples) >= min_n and s.rse < RSE_TARGET
        if enough or len(samples) >= max_n or (len(samples) >= min_n and time.perf_counter() - start > budget_s):
            return s


def cold_cpu(calls: Sequence[Call], budget_s: float, prepare: Prepare | None = None) -> tuple[Stat, list[object]]:
    """Wall-clock time of single calls, rotating over the input sets; returns the last result of each set."""
    last: list[object] = [None] * len(calls)
    turn = [0]

    def measure(n: int) -> list[float]:
        out = []
        for _ in range(n):
            i = turn[0] % len(calls)
            turn[0] += 1
            if prepare:
                prepare(i)
            t0 = time.perf_counter()
            last[i] = calls[i]()
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    return repeat(measure, budget_s, batch=len(calls), min_n=max(3, len(calls))), last


class CudaTimer:
    """Event timing on one CUDA device, with an L2 flush buffer twice the L2 size."""

    def __init__(self, l2_bytes: int):
        self.flush = torch.empty(max(2 * l2_bytes, 1 << 20) // 4, dtype=torch.int32, device="cuda")
        self.persisting_reset = _reset_persisting_l2()

    def cold(self, calls: Sequence[Call], budget_s: float, prepare: Prepare | None = None) -> tuple[Stat, list[object]]:
        """One call at a time after overwriting the flush buffer, so no input or output is in L2 when it starts."""
        last: list[object] = [None] * len(calls)
        turn = [0]

        def measure(n: int) -> list[float]:
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
            for start, end in ev:
                i = turn[0] % len(calls)
                turn[0] += 1
                if prepare:
                    prepare(i)
                self.flush.zero_()
                torch.cuda._sleep(SPIN_CYCLES)
                start.record()
                last[i] = calls[i]()
                end.record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) * 1e3 for s, e in ev]

        return repeat(measure, budget_s, batch=max(20, len(calls)), min_n=20), last

    def capture(self, calls: Sequence[Call], k: int = GRAPH_CALLS) -> tuple[torch.cuda.CUDAGraph, list[object]]:
        """A graph of k calls cycling over the input sets; returns it with each captured call's result."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for c in calls:
                c()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            results = [calls[i % len(calls)]() for i in range(k)]
        return graph, results

    def replay(
        self, graph: torch.cuda.CUDAGraph, k: int, budget_s: float, before: Callable[[], None] | None = None
    ) -> Stat:
        """Per-call time of the captured calls: each replay's time over k. `before` (refilling overwritten inputs)
        runs ahead of each replay's start event, so its work is queued outside the timed region."""
        for _ in range(3):
            if before:
                before()
            graph.replay()
        torch.cuda.synchronize()

        def measure(n: int) -> list[float]:
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
            for start, end in ev:
                if before:
                    before()
                start.record()
                graph.replay()
                end.record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) * 1e3 / k for s, e in ev]

        return repeat(measure, budget_s, batch=10, min_n=10)


def _reset_persisting_l2() -> bool:
    """Clears lines an earlier program pinned as persisting in L2, so they cannot favour one side; False when the
    runtime binding is missing (then nothing in this process set any)."""
    try:
        from cuda.bindings import runtime

        err = runtime.cudaCtxResetPersistingL2Cache()
        return int(err[0] if isinstance(err, tuple) else err) == 0
    except Exception:  # no binding, or one that does not match the driver: nothing here pinned lines either
        return False
