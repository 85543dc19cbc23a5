"""One engine run seen from the trusted side: have a sandboxed fork server (hotfloat.qualify.host) start a fresh
engine process, feed it the workload batch by batch, timestamp every completion as it arrives, and turn whatever
happens into a RunFrame (a dead or misbehaving engine is data, never an exception).
"""

from __future__ import annotations

import math
import socket
import time
from dataclasses import dataclass, field

from pydantic import ValidationError

from . import wire
from .host import ServerFault, engine_server
from .records import EngineSpec, Role, RunFrame, Workload
from .workload import prompts


@dataclass(frozen=True)
class Launch:
    """How engine processes are started and bounded."""

    warm: bool = True
    """Fork CPU engines from the shared, preloaded fork server (imports paid once); False: a cold, empty server per
    run, so each engine imports everything itself."""
    sandboxed: bool = True
    """Engines run inside the candidate sandbox; False (loudly logged) only where bubblewrap is unavailable."""
    startup_timeout_s: float = 600.0
    """Build, arm and warm-up must finish within this."""
    batch_timeout_s: float = 300.0
    threads: int = 1
    """CPU threads per engine (CPU runs only)."""
    extra_passes: dict[str, int] = field(default_factory=dict)
    """Calibration only: role -> extra stock activation passes per MLP call (a known slowdown)."""

    def cpu_seconds(self, workload: Workload) -> int:
        """RLIMIT_CPU of one engine: its whole wall-clock budget with every thread busy (at least two)."""
        wall = self.startup_timeout_s + (workload.passes * len(workload.batches) + 1) * self.batch_timeout_s
        return math.ceil(wall * max(2, self.threads))


class _Broken(Exception):
    """The engine process misbehaved, stalled or died."""


class _Raised(_Broken):
    """The engine process reported an exception (arming the bundle, or a kernel call, raised)."""


def run_engine(index: int, role: Role, engine: EngineSpec, workload: Workload, bundle: str | None,
               identity: str | None, launch: Launch) -> tuple[RunFrame, str | None]:
    """Runs the whole workload in one fresh engine process; returns its frame and the engine identity it reported."""
    warmup = [(prompts(workload, -1 - p, b), [r.max_new_tokens for r in batch])
              for p in range(workload.warmup_passes) for b, batch in enumerate(workload.batches)]
    spec = dict(engine.model_dump(), bundle=bundle, identity=identity, warmup=warmup, threads=launch.threads,
                extra_passes=launch.extra_passes.get(role, 0))
    started = time.monotonic()
    engine_id = None
    try:
        with engine_server(engine.device, warm=launch.warm, sandboxed=launch.sandboxed) as server:
            conn, theirs = socket.socketpair()
            with conn:
                try:
                    server.fork(theirs, launch.cpu_seconds(workload), launch.startup_timeout_s)
                finally:
                    theirs.close()
                wire.send(conn, spec)
                engine_id = str(_expect(conn, "ready", started + launch.startup_timeout_s)["identity"])
                frame = _timed(conn, index, role, workload, launch, started)
    except (_Broken, ServerFault, wire.WireError, OSError, ValueError, KeyError, TypeError, ValidationError) as e:
        frame = RunFrame(index=index, role=role, ok=False, raised=isinstance(e, _Raised), error=str(e)[:2000] or type(e).__name__,
                         wall_s=time.monotonic() - started)
    return frame, engine_id


def _timed(conn, index: int, role: Role, workload: Workload, launch: Launch, started: float) -> RunFrame:
    lat, toks, lps, margins = [], [], [], []
    timed = generated = 0.0
    for p in range(workload.passes):
        row = []
        for b, batch in enumerate(workload.batches):
            max_new = [r.max_new_tokens for r in batch]
            out = _serve(conn, prompts(workload, p, b), max_new, launch.batch_timeout_s)
            row += out
            timed += max(s for s, _ in out)
            generated += sum(max_new)
        lat.append([s for s, _ in row])
        toks.append([m["tokens"] for _, m in row])
        lps.append([m["logprobs"] for _, m in row])
        margins.append([m["margins"] for _, m in row])
    wire.send(conn, {"op": "stop"})
    counts = _expect(conn, "counts", time.monotonic() + launch.batch_timeout_s)
    return RunFrame(index=index, role=role, ok=True, latency_s=lat, tokens=toks, logprobs=lps, margins=margins,
                    routed=_int_map(counts.get("routed")), stock=_int_map(counts.get("stock")),
                    wall_s=time.monotonic() - started, tokens_per_s=generated / timed if timed else 0.0)


def _serve(conn, batch_prompts: list[list[int]], max_new: list[int], timeout: float) -> list[tuple[float, dict]]:
    """Sends one batch and timestamps each request's completion on arrival (the engine's own clock is not trusted)."""
    sent = time.perf_counter()
    deadline = time.monotonic() + timeout
    wire.send(conn, {"op": "batch", "prompts": batch_prompts, "max_new": max_new})
    done: dict[int, tuple[float, dict]] = {}
    while len(done) < len(batch_prompts):
        msg = _expect(conn, "done", deadline)
        i = msg.get("i")
        if not isinstance(i, int) or not 0 <= i < len(batch_prompts) or i in done:
            raise _Broken(f"engine sent a completion for request {i!r} it was not asked for")
        n = max_new[i]
        if not all(isinstance(msg.get(k), list) and len(msg[k]) == n for k in ("tokens", "logprobs", "margins")):
            raise _Broken(f"engine sent a malformed completion for request {i}")
        done[i] = (time.perf_counter() - sent, msg)
    return [done[i] for i in range(len(batch_prompts))]


def _expect(conn, kind: str, deadline: float) -> dict:
    msg = wire.recv(conn, deadline)
    if msg.get("type") == "error":
        raise _Raised(f"engine raised {str(msg.get('message'))[:2000]}")
    if msg.get("type") != kind:
        raise _Broken(f"engine sent {str(msg.get('type'))[:50]!r} where {kind!r} was due")
    return msg


def _int_map(value) -> dict[str, int]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and type(v) is int for k, v in value.items()):
        raise _Broken("engine sent malformed seam counts")
    return value

