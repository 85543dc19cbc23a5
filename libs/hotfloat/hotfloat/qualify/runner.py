"""One engine run seen from the trusted side: have the fork server start a fresh engine process, feed it the
workload batch by batch, timestamp every completion as it arrives, and turn whatever happens into a RunFrame
(a dead or misbehaving engine is data, never an exception).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from pydantic import ValidationError

from . import wire
from .records import EngineSpec, Role, RunFrame, Workload
from .workload import prompts


@dataclass(frozen=True)
class Launch:
    """How engine processes are started and bounded."""

    warm: bool = True
    """Fork engines from one long-lived preloaded fork server (imports paid once); False: a cold, empty server per
    run, so each engine imports everything itself."""
    startup_timeout_s: float = 600.0
    """Build, arm and warm-up must finish within this."""
    batch_timeout_s: float = 300.0
    threads: int = 1
    """CPU threads per engine (CPU runs only)."""
    extra_passes: dict[str, int] = field(default_factory=dict)
    """Calibration only: role -> extra stock activation passes per MLP call (a known slowdown)."""


class _Broken(Exception):
    """The engine process misbehaved, stalled or died."""


class _Raised(_Broken):
    """The engine process reported an exception (arming the bundle, or a kernel call, raised)."""


class ForkServer:
    """A hotfloat.qualify.zygote process; it imports torch and transformers once and forks engines on request.

    CPU engines need TRITON_INTERPRET=1 before triton is first imported (triton.language's own jit helpers are
    built at import time), so the server is per device type; for CUDA, availability checks go through NVML so that
    no import initialises CUDA before the fork."""

    def __init__(self, device: str, preload: bool):
        env = dict(os.environ, TRITON_INTERPRET="1") if device == "cpu" else dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1")
        argv = [sys.executable, "-m", "hotfloat.qualify.zygote"] + ([] if preload else ["--cold"])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env)

    def fork(self, path: str) -> int:
        self.proc.stdin.write(json.dumps({"socket": path}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise _Broken(f"the fork server exited (code {self.proc.poll()})")
        pid = json.loads(line)["pid"]
        if type(pid) is not int or pid <= 1:
            raise _Broken(f"the fork server answered with an invalid pid {pid!r}")
        return pid

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_WARM: dict[str, ForkServer] = {}


def _server(warm: bool, device: str) -> ForkServer:
    """A preloaded fork server on CPU; on CUDA every engine starts cold, because engines forked from a warm server
    failed their first CUDA call with cudaErrorInitializationError on the H200 (measured 2026-12-02)."""
    if not warm or device == "cuda":
        return ForkServer(device, preload=False)
    if device not in _WARM or _WARM[device].proc.poll() is not None:
        _WARM[device] = ForkServer(device, preload=True)
        atexit.register(_WARM[device].close)
    return _WARM[device]


def run_engine(index: int, role: Role, engine: EngineSpec, workload: Workload, bundle: str | None,
               identity: str | None, launch: Launch) -> tuple[RunFrame, str | None]:
    """Runs the whole workload in one fresh engine process; returns its frame and the engine identity it reported."""
    warmup = [(prompts(workload, -1 - p, b), [r.max_new_tokens for r in batch])
              for p in range(workload.warmup_passes) for b, batch in enumerate(workload.batches)]
    spec = dict(engine.model_dump(), bundle=bundle, identity=identity, warmup=warmup, threads=launch.threads,
                extra_passes=launch.extra_passes.get(role, 0))
    started = time.monotonic()
    server = pid = None
    engine_id = None
    with tempfile.TemporaryDirectory(prefix="hotfloat-engine-") as tmp, socket.socket(socket.AF_UNIX) as listener:
        try:
            path = os.path.join(tmp, "engine.sock")
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(launch.startup_timeout_s)
            server = _server(launch.warm, engine.device)
            pid = server.fork(path)
            conn, _ = listener.accept()
            with conn:
                wire.send(conn, spec)
                engine_id = str(_expect(conn, "ready", started + launch.startup_timeout_s)["identity"])
                frame = _timed(conn, index, role, workload, launch, started)
        except (_Broken, wire.WireError, OSError, ValueError, KeyError, TypeError, ValidationError) as e:
            frame = RunFrame(index=index, role=role, ok=False, raised=isinstance(e, _Raised), error=str(e)[:2000] or type(e).__name__,
                             wall_s=time.monotonic() - started)
        finally:
            if pid is not None:
                _kill(pid)
            if server is not None and not launch.warm:
                server.close()
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


def _kill(pid: int) -> None:
    """Kills the engine's whole process group (it called setsid first); the fork server reaps it."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
