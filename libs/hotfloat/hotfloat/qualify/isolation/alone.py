"""The isolation itself: the watchdog it speaks through, the locks, the stops, the memory readings, the witnesses
that name who held the GPU (NVML and the quiet probe, each naming the engine at fault or the host, so that nothing a
candidate leaves behind is charged to anyone else) and the record (the package's docstring says why each is there)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from ...errors import InfrastructureError
from ...engine import hostload
from .memory import Ledger, usage
from ..records import IsolationRecord
from .resident import EngineFault, ResidentEngine
from .watchdog import CUDA_ERROR_NOT_READY
from .client import REPLY_S, Watchdog

PROBE_SPAN_US = 5000
QUIET_GAP_US = 500.0
"""A gap this long between two timer reads of a lone one-thread kernel means another context held the GPU."""


def now_us() -> int:
    """Microseconds since the epoch: NVML's clock for utilisation samples."""
    return int(time.time() * 1e6)


LOCK_TIMEOUT_MS = 2000
"""An honest engine drains in milliseconds after its last completion; anything it still runs this long is a choice."""
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
        self.ledger: Ledger | None = None
        """Set by the fleet once it holds a memory plan (`hold`); None: memory is not read (CPU without a driver)."""

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
        if hello.get("sees_itself") is False:
            wd.close()
            why = hello.get("why", {}).get("pids", "")
            raise InfrastructureError(
                "GPU isolation cannot see this namespace's processes: NVML does not list the watchdog's own context "
                f"under its pid {hello.get('pid')} (it speaks the node's pids), so no engine could be locked or held to "
                "its memory share; mount the node's /proc read-only and name it in HOTFLOAT_HOST_PROC"
                + (f" ({why})" if why else "")
            )
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
        """The protections that really ran, as the evidence records them."""
        parts = [
            "sigstop",
            *(["checkpoint-lock"] if self.locking else []),
            *(["quiet-probe"] if self.probing else []),
            *(["nvml-witness"] if self.witness else []),
            *(["memory-shares"] if self.ledger else []),
        ]
        return "+".join(parts)

    def device_memory(self) -> dict | None:
        """The device's name, total and used bytes before any engine boots; None where no driver reports them."""
        return self.wd.ask("memory") if self.witness else None

    def hold(self, ledger: Ledger) -> None:
        """From now on every engine is held to its share (`ledger`) at ready and around every pass."""
        self.ledger = ledger

    def check_memory(self, trees: dict[str, list[int]], at: str, *, owner: str, ready: Collection[str] = ()) -> None:
        """Reads the device memory of every engine (name -> the processes of its tree, walked by the caller) and
        charges the first one over its share; `ready` names the engines that just booted, `owner` answers for a
        watchdog that does not reply."""
        if self.ledger is not None and trees:
            self.ledger.check(self._held(trees, owner), at, ready=ready)

    def over_share(self, engines: list[ResidentEngine], owner: str) -> list[str]:
        """The engines over their share right now (none without a plan, or where the host cannot tell)."""
        if self.ledger is None:
            return []
        try:
            return self.ledger.over(self._held({e.name: e.pids() for e in engines}, owner))
        except EngineFault as f:
            if f.kind == "host":
                return []
            raise

    def _held(self, trees: dict[str, list[int]], owner: str) -> dict[str, int]:
        """Bytes each engine holds; a host whose NVML cannot tell per-process memory is the host's fault."""
        got = self.ask("memory", owner)
        try:
            return usage(got["procs"], trees)
        except InfrastructureError as err:
            raise EngineFault(f"host: {err}", kind="host", who=owner) from None

    @contextmanager
    def alone(self, engines: list[ResidentEngine | None], serving: ResidentEngine) -> Iterator[None]:
        """`serving` alone on the machine for the duration: the others drained, locked and stopped, `serving`
        itself drained and held locked while every engine's memory is read and the GPU is probed quiet; afterwards
        NVML and the memory are read for the pass and everything undone. Each engine's process tree is walked once
        before the locks and once after the stop (a stopped engine cannot fork again), not once per check: every
        walk reads all of /proc."""
        others = [e for e in engines if e is not None and e is not serving]
        t0 = time.perf_counter()
        locked: dict[str, list[int]] = {}
        stopped: list[ResidentEngine] = []
        mine: list[int] = []
        try:
            for e in others:
                pids = e.pids()
                self._not_self_stopped(e, pids)
                if self.locking:
                    locked[e.name] = self._lock(e, pids)
            if self.locking:  # every pass starts on a drained GPU: the served engine's own leftovers too
                mine = self._lock(serving, serving.pids())
            for e in others:
                e.pause()
                stopped.append(e)
            owner = {p: e.name for e in others for p in e.pids()} if self.witness else {}
            if self.locking and self.witness:
                self._all_locked(owner, locked, serving)
            # the stopped engines' trees as walked after the stop; the served engine's afresh (it may have forked)
            trees = {e.name: [p for p, n in owner.items() if n == e.name] for e in others}
            self.check_memory(
                {**trees, serving.name: serving.pids()}, f"before {serving.name}'s pass", owner=serving.name
            )
            if self.probing:
                self._quiet(serving, owner, {p for ps in (*locked.values(), mine) for p in ps})
            held, mine = mine, []
            self._unlock(serving, held)
            since = now_us()
            setup = time.perf_counter() - t0
            yield
            t1 = time.perf_counter()
            if self.probing:  # recorded only: the engine just served may still drain; the next lock judges it
                self.gaps_us.append(self.ask("probe", serving.name, span_us=PROBE_SPAN_US)["gap_us"])
            if self.witness:
                self._witness(owner, serving, since + int(NVML_GUARD_S * 1e6))
            self.check_memory(
                {**trees, serving.name: serving.pids()}, f"after {serving.name}'s pass", owner=serving.name
            )
            self.cost_ms.append(1e3 * (setup + time.perf_counter() - t1))
        finally:
            if mine:
                self._unlock(serving, mine)
            for e in stopped:
                e.resume()
            for e in others:
                if locked.get(e.name):
                    self._unlock(e, locked[e.name])

    def _all_locked(self, owner: dict[int, str], locked: dict[str, list[int]], serving: ResidentEngine) -> None:
        """Once the others are stopped (`owner`: their processes) no process can make a new GPU context, so every
        context holder among them must be one that was locked: a process that made its first context between the
        look and the stop (and may have launched work with it) is its engine's fault."""
        for p in sorted(set(self.ask("contexts", serving.name)["pids"]) & owner.keys()):
            if p not in locked.get(owner[p], []):
                raise EngineFault(
                    f"isolation: engine {owner[p]}'s process {p} made a GPU context while the validator was locking it",
                    kind="isolation",
                    who=owner[p],
                )

    def _quiet(self, serving: ResidentEngine, owner: dict[int, str], locked: set[int]) -> None:
        """Every engine is drained and locked (`locked`: the processes that hold a context) and all but `serving`
        stopped: a gap in the probe's timer (seen twice) is a context holding the GPU that no lock reached. A live
        holder nobody locked names its owner: a stopped engine's process or `serving`'s own made a context after the
        look (that engine's fault), a process outside every engine makes the host unfit to time anything. With every
        live holder locked, the context was one whose process has exited since, and only `serving`, running until its
        lock, could have ended one."""
        for _ in range(2):
            got = self.ask("probe", serving.name, span_us=PROBE_SPAN_US)
            self.gaps_us.append(got["gap_us"])
            if got["gap_us"] <= QUIET_GAP_US:
                return
        why = f"the GPU was not quiet before {serving.name}'s pass: the probe's timer stalled {got['gap_us']:.0f} us"
        mine = set(serving.pids())
        loose = [p for p in self.ask("contexts", serving.name)["pids"] if p not in locked and hostload.alive(p)]
        for pid in loose:
            name = owner.get(pid) or (serving.name if pid in mine else None)
            if name is not None:
                raise EngineFault(
                    f"isolation: {why}; engine {name}'s process {pid} holds a context it made after the look",
                    kind="isolation",
                    who=name,
                )
        if loose:
            raise EngineFault(
                f"host: {why}; process {loose[0]} outside every engine holds a context", kind="host", who=serving.name
            )
        raise EngineFault(
            f"isolation: {why} with every live context locked: a process that has exited since held it, which only "
            f"{serving.name} could have run",
            kind="isolation",
            who=serving.name,
        )

    def _witness(self, owner: dict[int, str], serving: ResidentEngine, since_us: int) -> None:
        """NVML's samples of the pass: a stopped engine's process (`owner`) using SMs is its fault, a live process of
        no engine the host's (the served engine's own processes, walked afresh since it may have forked, are left
        out), and one that has exited since was the served engine's: no stopped engine could start or end one."""
        mine = set(serving.pids())
        busy = [
            (owner.get(s["pid"]), s)
            for s in self.ask("util", serving.name, since_us=since_us)["samples"]
            if s["sm"] > 0 and s["pid"] not in mine
        ]
        for name, sample in busy:
            self.witnessed += 1
            if name is None and not hostload.alive(sample["pid"]):
                continue  # a process of the served engine's that exited: its work was the pass's own
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

    @staticmethod
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

    def _lock(self, e: ResidentEngine, pids: list[int]) -> list[int]:
        """Locks the processes of `e`'s tree (`pids`) that hold a GPU context (NVML; every process where NVML is
        missing); one that holds a context and does not lock is `e`'s fault. A process that creates its first
        context after this look is caught once everything is stopped (`_all_locked`)."""
        with_context = set(self.ask("contexts", e.name)["pids"]) & set(pids) if self.witness else set()
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

    def _unlock(self, e: ResidentEngine, pids: list[int]) -> None:
        """A process that cannot be unlocked (it exited while locked, or the driver refused) is its engine's fault."""
        if not pids:
            return
        try:
            res = self.wd.ask("unlock", pids=pids)["results"]
        except (TimeoutError, InfrastructureError) as err:
            self._restart()
            raise EngineFault(
                f"isolation: engine {e.name} could not be unlocked: {err}", kind="isolation", who=e.name
            ) from None
        for p, rc, _ in res:
            if rc != 0:
                raise EngineFault(
                    f"isolation: engine {e.name}'s process {p} could not be unlocked (CUDA error {rc})",
                    kind="isolation",
                    who=e.name,
                )

    def ask(self, op: str, owner: str, **args) -> dict:
        """A watchdog request whose missing reply is `owner`'s fault (the watchdog is restarted: its driver call may
        hang on), and whose error reply is the host's, charged by name so the run ends as data, not a crash."""
        try:
            return self.wd.ask(op, **args)
        except TimeoutError as err:
            self._restart()
            raise EngineFault(
                f"isolation: the watchdog's {op} did not answer while engine {owner} ran: {err}",
                kind="isolation",
                who=owner,
            ) from None
        except InfrastructureError as err:
            raise EngineFault(f"host: {err}", kind="host", who=owner) from None

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
