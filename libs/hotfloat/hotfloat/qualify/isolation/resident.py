"""Resident engines seen from the trusted side: start each in its own sandbox, boot it once, feed it passes over
its channel, timestamp every completion on arrival, and turn whatever it does into data.

The validator alone holds a clock: an engine only ever receives the prompts of the batch that is due and answers
with tokens; the time between sending a batch and receiving its completions is what the rule compares. Before any
engine starts, the validator process makes itself non-dumpable (no same-uid ptrace, no core, no /proc/<pid>/mem),
on top of the engines living in other pid namespaces where it does not exist. The validator's own garbage
collector is off inside a timed window: a collection there would be charged to whichever engine was being served.

While one engine is timed, every other engine is drained, locked and stopped (hotfloat.qualify.isolation, which
uses `pause`/`resume` here): SIGSTOP cannot be caught, blocked or ignored, so an idle candidate cannot burn CPUs (its
affinity is its own to widen), and the driver's lock keeps it from leaving GPU work running.
"""

from __future__ import annotations

import ctypes
import gc
import math
import os
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...engine import hostload, wire
from .. import messages
from ..host import spawn_engine

PR_SET_DUMPABLE = 4


class EngineFault(Exception):
    """The engine misbehaved, stalled or died; `kind` says how (records.FaultKind) and `who` names the engine at
    fault when it is not the one being served (one whose GPU work or stop broke another's pass). Every kind but
    `host` is the engine's own: a candidate's is a FAIL, a baseline's or the twin's is NO_DECISION."""

    def __init__(self, message: str, *, kind: str, who: str | None = None):
        super().__init__(message)
        self.kind, self.who = kind, who


def harden_self() -> None:
    """Makes the validator process non-dumpable, so no process of the same uid can trace or read it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def is_dumpable() -> bool:
    libc = ctypes.CDLL(None)
    return libc.prctl(3, 0, 0, 0, 0) == 1  # PR_GET_DUMPABLE


@dataclass(frozen=True)
class Ready:
    """What an engine reported once booted, and how long its boot took."""

    identity: str
    info: dict[str, str]
    boot_s: float


@dataclass(frozen=True)
class Served:
    """One engine's pass (or one batch of it): its seconds on the validator's clock, each request's latency and
    completion, and (when the fleet reads the host) what the host did meanwhile (hotfloat.engine.hostload)."""

    seconds: float
    latency_s: list[float]
    outputs: list[dict]
    host: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Counts:
    """Seam calls an engine routed to its bundle and to the stock kernels, per slot, over its lifetime."""

    routed: dict[str, int]
    stock: dict[str, int]


class ResidentEngine:
    """One engine process for a whole qualification: `start`, `ready`, then `serve` passes, then `stop`/`close`."""

    def __init__(self, name: str, spec: dict, *, device: str, kind: str, sandboxed: bool, model_dir: str | None):
        self.name, self.spec = name, spec
        self.workdir = Path(tempfile.mkdtemp(prefix=f"hotfloat-engine-{name}-"))
        self.conn, theirs = socket.socketpair()
        self.started = time.monotonic()
        try:
            self.proc = spawn_engine(
                device,
                kind,
                sandboxed=sandboxed,
                model_dir=model_dir,
                conn_fd=theirs.fileno(),
                log_path=self.workdir / "engine.log",
                workdir=self.workdir,
            )
        except BaseException:
            self.conn.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        finally:
            theirs.close()
        self.boot_s = 0.0
        try:
            self._send(spec)
        except EngineFault:
            self.close()
            raise

    def ready(self, deadline: float) -> Ready:
        """Waits for the engine's ready message: the identity and info it reports about itself."""
        msg = self._expect(deadline, "ready")
        self.boot_s = time.monotonic() - self.started
        return Ready(msg.identity, dict(msg.info), self.boot_s)

    def serve(self, prompts: list[list[int]], max_new: list[int], timeout_s: float) -> Served:
        """Sends one batch: seconds until its last completion, and each request's latency and completion in order."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            sent = time.perf_counter()
            deadline = time.monotonic() + timeout_s
            self._send({"op": "batch", "prompts": prompts, "max_new": max_new})
            done: dict[int, tuple[float, dict]] = {}
            while len(done) < len(prompts):
                msg = self._expect(deadline, "done")
                if not msg.i < len(prompts) or msg.i in done:
                    raise EngineFault(
                        f"engine sent a completion for request {msg.i} it was not asked for", kind="protocol"
                    )
                done[msg.i] = (time.perf_counter() - sent, _completion(msg, max_new[msg.i]))
        finally:
            if collecting:
                gc.enable()
        got = [done[i] for i in range(len(prompts))]
        return Served(max(s for s, _ in got), [s for s, _ in got], [c for _, c in got])

    def pids(self) -> list[int]:
        """Every live process of this engine's sandbox (its launcher first)."""
        return list(hostload.tree(self.proc.pid))

    def pause(self) -> None:
        """Stops every process of this engine; the tree is walked until no unstopped process is left (a process
        forking as we walk gets its child stopped on the next walk)."""
        stopped: set[int] = set()
        for _ in range(STOP_WALKS):
            todo = set(hostload.tree(self.proc.pid)) - stopped
            if not todo:
                return self._await_stopped(stopped)
            for pid in todo:
                self._kill(pid, signal.SIGSTOP)
            stopped |= todo
        raise EngineFault(
            f"engine {self.name} kept starting processes while being stopped", kind="isolation", who=self.name
        )

    def _await_stopped(self, pids: set[int]) -> None:
        """SIGSTOP takes effect when the process is next scheduled, which on a loaded host is later than the kill:
        timing starts only once every process reads stopped (or gone)."""
        deadline = time.monotonic() + STOP_WAIT_S
        while running := {p for p in pids if hostload.state(p) not in STOPPED_STATES}:
            if time.monotonic() > deadline:
                raise EngineFault(
                    f"engine {self.name}'s processes {sorted(running)[:4]} did not stop within {STOP_WAIT_S:.0f} s",
                    kind="isolation",
                    who=self.name,
                )
            time.sleep(0.001)

    def resume(self) -> None:
        for pid in hostload.tree(self.proc.pid):
            self._kill(pid, signal.SIGCONT)

    def _kill(self, pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass  # exited since the walk
        except PermissionError as e:
            raise EngineFault(
                f"cannot signal engine {self.name}'s process {pid}: {e}", kind="host", who=self.name
            ) from None

    def reading(self) -> hostload.Reading:
        """The host counters for this engine's process tree (calibration diagnostics; read outside timed windows)."""
        return hostload.read(self.proc.pid)

    def stop(self, timeout_s: float) -> Counts:
        """Ends serving; returns the routed and stock seam counts the engine reports."""
        return self._counts("stop", timeout_s)

    def counts(self, timeout_s: float) -> Counts:
        """The routed and stock seam counts so far, without stopping (which slots the candidate really used)."""
        return self._counts("counts", timeout_s)

    def _counts(self, op: str, timeout_s: float) -> Counts:
        self._send({"op": op})
        msg = self._expect(time.monotonic() + timeout_s, "counts")
        return Counts(dict(msg.routed), dict(msg.stock))

    def twin_slots(self, slots: list[str], timeout_s: float) -> None:
        """A twin perturbs exactly these slots from now on; returns once the engine says it applied them."""
        self._send({"op": "twin", "slots": slots})
        msg = self._expect(time.monotonic() + timeout_s, "twin")
        if sorted(msg.slots) != sorted(slots):
            raise EngineFault(f"the twin applied slots {sorted(msg.slots)}, not {sorted(slots)}", kind="protocol")

    def audit(self, rnd: int, timeout_s: float) -> list:
        """What the engine's in-engine audit kept in round `rnd` (hotfloat.seams.audit), as typed message parts."""
        self._send({"op": "audit", "round": rnd})
        deadline = time.monotonic() + timeout_s
        parts = [self._expect(deadline, "audit")]
        while len(parts) < parts[0].parts:
            parts.append(self._expect(deadline, "audit"))
        return parts

    def log_tail(self) -> str:
        from ...sandbox import log_tail

        return log_tail(self.workdir / "engine.log")

    def close(self) -> None:
        """Kills the engine's whole sandbox (every process it started) and removes its working directory; with
        HOTFLOAT_ENGINE_LOG_DIR set (device diagnostics), its output log is kept there first."""
        self.conn.close()
        self.proc.kill()
        keep = os.environ.get("HOTFLOAT_ENGINE_LOG_DIR")
        if keep:
            shutil.copy(self.workdir / "engine.log", Path(keep) / f"engine-{self.name}-{os.getpid()}.log")
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def lifetime_s(self) -> float:
        return time.monotonic() - self.started

    def _send(self, msg: dict) -> None:
        try:
            wire.send(self.conn, msg)
        except OSError as e:
            raise EngineFault(f"the engine's channel broke: {e}; {self.log_tail()}", kind="died") from None

    def _expect(self, deadline: float, *kinds: str):
        """The next message, typed (hotfloat.qualify.messages); anything else is this engine's fault."""
        try:
            msg = messages.decode(wire.recv(self.conn, deadline), *kinds)
        except wire.WireError as e:
            tail = "" if e.kind == "protocol" else f"; {self.log_tail()}"
            raise EngineFault(f"{e}{tail}", kind=e.kind) from None
        except messages.Violation as e:
            raise EngineFault(f"engine {e}", kind="protocol") from None
        if isinstance(msg, messages.Error):
            raise EngineFault(f"engine raised {msg.message}", kind="raised")
        return msg


STOP_WALKS = 64
STOP_WAIT_S = 5.0
STOPPED_STATES = {"T", "t", "Z", "X", None}
"""/proc states of a process that cannot run: stopped, traced-stopped, zombie, dead, or gone (None)."""


def _completion(msg: messages.Done, n: int) -> dict:
    """One completion of the length asked for; logprobs are rounded to 1e-5 (evidence size; the live gate sees the
    same values), NaN and infinities kept as they are."""
    if not len(msg.tokens) == len(msg.logprobs) == len(msg.margins) == n:
        raise EngineFault(
            f"engine sent a malformed completion for request {msg.i}: {len(msg.tokens)} tokens where "
            f"{n} were asked for",
            kind="protocol",
        )
    r = lambda v: round(v, 5) if math.isfinite(v) else v  # noqa: E731
    return {
        "tokens": list(msg.tokens),
        "logprobs": [r(v) for v in msg.logprobs],
        "margins": [r(v) for v in msg.margins],
    }


def cpu_sets(n: int, available: list[int] | None = None) -> list[list[int] | None]:
    """Disjoint CPU sets for n engines, leaving the first CPU to the validator; None each where too few CPUs."""
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    if len(cpus) < 2 * n + 1:
        return [None] * n
    rest = cpus[1:]
    share = len(rest) // n
    return [rest[k * share : (k + 1) * share] for k in range(n)]
