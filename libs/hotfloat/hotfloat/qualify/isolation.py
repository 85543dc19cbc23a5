"""No engine works while another is timed: checked around every timed pass, never assumed.

SIGSTOP stops an idle engine's threads but not a kernel it already put on the GPU, and without MPS the GPU
time-slices between contexts: one left-running, one-warp kernel of a stopped process slowed another process's work
1.85x on the H200 (../shared/gpu-isolation). So before a pass, every other engine is

1. locked through the driver's checkpoint API (by the watchdog process, hotfloat.qualify.watchdog): the lock waits
   for the engine's submitted GPU work and then blocks its CUDA calls; work still running at the timeout is that
   engine's fault (the candidate's: FAIL). A process NVML lists with a context must lock, or its engine is at fault;
2. stopped (SIGSTOP, every process of its tree); a process that was stopped before we stopped it stopped itself,
   which would hang the lock: its engine's fault. Once stopped, no process can make a context, so NVML's list is read
   again: a holder that was not locked made its context in between, its engine's fault.

The engine about to be timed is drained too (locked and unlocked at once), so every pass starts on an idle GPU. Then a
quiet probe (a timer loop on the GPU whose longest gap shows another context holding it: 0.0 us idle, 2.4 ms beside
another context's kernel on the H200) must find the GPU quiet before the pass (else a context outside the
qualification holds it: the host's fault, NO_DECISION); it runs again after the pass, recorded only. NVML's
per-process SM utilisation during the pass is a second witness: a stopped engine's pid using SMs is that engine's
fault, an unknown pid the host's. After the pass the others are
continued, then unlocked (never lock a stopped process: the lock hangs). All of it is outside the timed window; its
cost per pass is recorded. Without the checkpoint API (CPU, old drivers) only the stop is in force, and the evidence
says so; on CUDA that refuses to qualify unless the caller opts out.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import InfrastructureError
from . import hostload
from .records import IsolationRecord
from .resident import EngineFault, ResidentEngine
from .watchdog import CUDA_ERROR_NOT_READY
from .watchdog_client import REPLY_S, Watchdog

LOCK_TIMEOUT_MS = 2000
"""An honest engine drains in milliseconds after its last completion; anything it still runs this long is a choice."""
PROBE_SPAN_US = 5000
QUIET_GAP_US = 500.0
"""A gap this long between two timer reads of a lone one-thread kernel means another context held the GPU."""
NVML_GUARD_S = 1.0
"""Utilisation samples within this much of a pass's start may still describe the engine served before it (each
sample averages the driver's last sampling period, up to a second)."""


class Isolation:
    """Keeps idle engines idle around each timed pass and keeps the record of what it checked."""

    def __init__(self, watchdog: Watchdog | None, hello: dict):
        self.wd, self.hello = watchdog, hello
        self.locking = bool(hello.get("checkpoint"))
        self.probing, self.witness = bool(hello.get("probe")), bool(hello.get("nvml"))
        self.cost_ms: list[float] = []
        self.lock_ms: list[float] = []
        self.gaps_us: list[float] = []
        self.witnessed = 0

    @classmethod
    def start(cls, device: str, required: bool) -> Isolation:
        """The isolation this host offers; on CUDA a host without the checkpoint lock is refused unless not `required`."""
        if device != "cuda":
            return cls(None, {"why": {"checkpoint": "CPU engines hold no GPU work: stopping them is enough"}})
        return cls.connect(Watchdog(), required)

    @classmethod
    def connect(cls, wd: Watchdog, required: bool) -> Isolation:
        """Isolation through the watchdog `wd` (closed here if the host cannot isolate and isolation is required)."""
        try:
            hello = wd.ask("hello", wait_s=60.0)
        except (TimeoutError, InfrastructureError) as e:
            wd.close()
            raise InfrastructureError(f"the GPU watchdog did not start: {e}") from None
        if required and not (hello.get("checkpoint") and hello.get("probe")):
            wd.close()
            why = "; ".join(f"{k}: {v}" for k, v in hello.get("why", {}).items())
            raise InfrastructureError(
                f"GPU isolation unavailable ({why}); qualifying without it lets an idle "
                "engine's kernels slow the timed one (opt out explicitly to run anyway)"
            )
        return cls(wd, hello)

    @property
    def mode(self) -> str:
        parts = [
            "sigstop",
            *(["checkpoint-lock"] if self.locking else []),
            *(["quiet-probe"] if self.probing else []),
            *(["nvml-witness"] if self.witness else []),
        ]
        return "+".join(parts)

    @contextmanager
    def alone(self, engines: list[ResidentEngine | None], serving: ResidentEngine) -> Iterator[None]:
        """`serving` alone on the machine for the duration: the others drained, locked and stopped, `serving`
        itself drained, the GPU probed quiet; afterwards NVML is read for the pass and everything undone. Each
        engine's process tree is walked once before the locks and once after the stop (a stopped engine cannot fork
        again), not once per check: every walk reads all of /proc."""
        others = [e for e in engines if e is not None and e is not serving]
        t0 = time.perf_counter()
        locked: dict[str, list[int]] = {}
        stopped: list[ResidentEngine] = []
        try:
            for e in others:
                pids = e.pids()
                _not_self_stopped(e, pids)
                if self.locking:
                    locked[e.name] = self._lock(e, pids)
            if self.locking:  # every pass starts on a drained GPU: the served engine's own leftovers too
                self._unlock(serving, self._lock(serving, serving.pids()))
            for e in others:
                e.pause()
                stopped.append(e)
            owner = {p: e.name for e in others for p in e.pids()} if self.witness else {}
            if self.locking and self.witness:
                self._all_locked(owner, locked)
            if self.probing:
                self._quiet(serving)
            since = self._now_us()
            setup = time.perf_counter() - t0
            yield
            t1 = time.perf_counter()
            if self.probing:  # recorded only: the engine just served may still drain; the next lock judges it
                self.gaps_us.append(self.wd.ask("probe", span_us=PROBE_SPAN_US)["gap_us"])
            if self.witness:
                self._witness(owner, serving, since + int(NVML_GUARD_S * 1e6))
            self.cost_ms.append(1e3 * (setup + time.perf_counter() - t1))
        finally:
            for e in stopped:
                e.resume()
            for e in others:
                if locked.get(e.name):
                    self._unlock(e, locked[e.name])

    def _lock(self, e: ResidentEngine, pids: list[int]) -> list[int]:
        """Locks the processes of `e`'s tree (`pids`) that hold a GPU context (NVML; every process where NVML is
        missing); one that holds a context and does not lock is `e`'s fault. A process that creates its first
        context after this look is caught once everything is stopped (`_all_locked`)."""
        with_context = set(self.wd.ask("contexts")["pids"]) & set(pids) if self.witness else set()
        pids = [p for p in pids if p in with_context] if self.witness else pids
        if not pids:
            return []
        try:
            res = self.wd.ask(
                "lock", wait_s=REPLY_S + len(pids) * LOCK_TIMEOUT_MS / 1e3, pids=pids, timeout_ms=LOCK_TIMEOUT_MS
            )["results"]
        except TimeoutError:
            e.resume()  # a hung lock completes once its target runs again
            self._restart()
            raise EngineFault(
                f"isolation: the checkpoint lock of engine {e.name} hung (its process was stopped "
                "before the validator stopped it)",
                kind="isolation",
                who=e.name,
            ) from None
        ok = [p for p, rc, _ in res if rc == 0]
        self.lock_ms += [ms for _, rc, ms in res if rc == 0]
        for p, rc, ms in res:
            if rc == CUDA_ERROR_NOT_READY:
                self._unlock(e, ok)
                raise EngineFault(
                    f"isolation: engine {e.name} still had GPU work running {ms:.0f} ms after its pass "
                    f"(checkpoint lock of pid {p}: CUDA_ERROR_NOT_READY)",
                    kind="isolation",
                    who=e.name,
                )
            if p in with_context and rc != 0:
                self._unlock(e, ok)
                raise EngineFault(
                    f"isolation: engine {e.name}'s process {p} holds a GPU context but could not be "
                    f"locked (CUDA error {rc})",
                    kind="isolation",
                    who=e.name,
                )
        return ok

    def _all_locked(self, owner: dict[int, str], locked: dict[str, list[int]]) -> None:
        """Once the others are stopped (`owner`: their processes) no process can make a new GPU context, so every
        context holder among them must be one that was locked: a process that made its first context between the
        look and the stop (and may have launched work with it) is its engine's fault."""
        for p in sorted(set(self.wd.ask("contexts")["pids"]) & owner.keys()):
            if p not in locked.get(owner[p], []):
                raise EngineFault(
                    f"isolation: engine {owner[p]}'s process {p} made a GPU context while the validator was locking it",
                    kind="isolation",
                    who=owner[p],
                )

    def _unlock(self, e: ResidentEngine, pids: list[int]) -> None:
        if pids:
            try:
                self.wd.ask("unlock", pids=pids)
            except (TimeoutError, InfrastructureError) as err:
                raise EngineFault(f"host: cannot unlock engine {e.name}: {err}", kind="host", who=e.name) from None

    def _quiet(self, serving: ResidentEngine) -> None:
        """Every engine is drained and all but `serving` locked: a gap in the probe's timer (seen twice) can only be
        a context outside this qualification holding the GPU, which makes the host unfit to time anything."""
        for _ in range(2):
            got = self.wd.ask("probe", span_us=PROBE_SPAN_US)
            self.gaps_us.append(got["gap_us"])
            if got["gap_us"] <= QUIET_GAP_US:
                return
        raise EngineFault(
            f"host: the GPU was not quiet before {serving.name}'s pass with every engine drained: the "
            f"probe's timer stalled {got['gap_us']:.0f} us",
            kind="host",
            who=serving.name,
        )

    def _witness(self, owner: dict[int, str], serving: ResidentEngine, since_us: int) -> None:
        """NVML's samples of the pass: a stopped engine's process (`owner`) using SMs is its fault, a process of no
        engine the host's (the served engine's own processes, walked afresh since it may have forked, are left out)."""
        mine = set(serving.pids())
        busy = [
            (owner.get(s["pid"]), s)
            for s in self.wd.ask("util", since_us=since_us)["samples"]
            if s["sm"] > 0 and s["pid"] not in mine
        ]
        for name, sample in busy:
            self.witnessed += 1
            if name is None:
                raise EngineFault(
                    f"host: process {sample['pid']} outside every engine used the GPU (SM "
                    f"{sample['sm']}%) while {serving.name} was timed",
                    kind="host",
                    who=serving.name,
                )
            raise EngineFault(
                f"isolation: engine {name} used the GPU (NVML: SM {sample['sm']}% for pid {sample['pid']}) "
                f"while stopped and {serving.name} was timed",
                kind="isolation",
                who=name,
            )

    def _now_us(self) -> int:
        return int(time.time() * 1e6)

    def _restart(self) -> None:
        self.wd.close()
        self.wd = Watchdog(self.wd.argv)

    def record(self) -> IsolationRecord:
        med = lambda xs: statistics.median(xs) if xs else 0.0  # noqa: E731
        return IsolationRecord(
            mode=self.mode,
            why_not=self.hello.get("why", {}),
            passes=len(self.cost_ms),
            cost_ms_median=med(self.cost_ms),
            cost_ms_max=max(self.cost_ms, default=0.0),
            lock_ms_median=med(self.lock_ms),
            lock_ms_max=max(self.lock_ms, default=0.0),
            probe_gap_us_max=max(self.gaps_us, default=0.0),
            witness_samples=self.witnessed,
        )

    def close(self) -> None:
        if self.wd is not None:
            self.wd.close()


def _not_self_stopped(e: ResidentEngine, pids: list[int]) -> None:
    """An engine process that is stopped before the validator stopped it stopped itself (a lock would hang on it);
    looked at twice, so a continue still being delivered is not mistaken for it."""
    for p in pids:
        if hostload.state(p) not in ("T", "t"):
            continue
        time.sleep(0.1)
        if hostload.state(p) in ("T", "t"):
            raise EngineFault(
                f"isolation: engine {e.name}'s process {p} was stopped before the validator stopped it",
                kind="isolation",
                who=e.name,
            )
