"""Who held the GPU: the checks around a timed pass that read NVML and the quiet probe, each naming the engine at
fault (or the host) for what it sees, so that nothing a candidate leaves behind is charged to anyone else."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .. import hostload
from .resident import EngineFault, ResidentEngine

if TYPE_CHECKING:
    from .alone import Isolation

PROBE_SPAN_US = 5000
QUIET_GAP_US = 500.0
"""A gap this long between two timer reads of a lone one-thread kernel means another context held the GPU."""


def now_us() -> int:
    """Microseconds since the epoch: NVML's clock for utilisation samples."""
    return int(time.time() * 1e6)


def all_locked(iso: Isolation, owner: dict[int, str], locked: dict[str, list[int]], serving: ResidentEngine) -> None:
    """Once the others are stopped (`owner`: their processes) no process can make a new GPU context, so every
    context holder among them must be one that was locked: a process that made its first context between the
    look and the stop (and may have launched work with it) is its engine's fault."""
    for p in sorted(set(iso.ask("contexts", serving.name)["pids"]) & owner.keys()):
        if p not in locked.get(owner[p], []):
            raise EngineFault(
                f"isolation: engine {owner[p]}'s process {p} made a GPU context while the validator was locking it",
                kind="isolation",
                who=owner[p],
            )


def quiet(iso: Isolation, serving: ResidentEngine, owner: dict[int, str], locked: set[int]) -> None:
    """Every engine is drained and locked (`locked`: the processes that hold a context) and all but `serving`
    stopped: a gap in the probe's timer (seen twice) is a context holding the GPU that no lock reached. A live
    holder nobody locked names its owner: a stopped engine's process or `serving`'s own made a context after the
    look (that engine's fault), a process outside every engine makes the host unfit to time anything. With every
    live holder locked, the context was one whose process has exited since, and only `serving`, running until its
    lock, could have ended one."""
    for _ in range(2):
        got = iso.ask("probe", serving.name, span_us=PROBE_SPAN_US)
        iso.gaps_us.append(got["gap_us"])
        if got["gap_us"] <= QUIET_GAP_US:
            return
    why = f"the GPU was not quiet before {serving.name}'s pass: the probe's timer stalled {got['gap_us']:.0f} us"
    mine = set(serving.pids())
    loose = [p for p in iso.ask("contexts", serving.name)["pids"] if p not in locked and hostload.alive(p)]
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


def witness(iso: Isolation, owner: dict[int, str], serving: ResidentEngine, since_us: int) -> None:
    """NVML's samples of the pass: a stopped engine's process (`owner`) using SMs is its fault, a live process of
    no engine the host's (the served engine's own processes, walked afresh since it may have forked, are left
    out), and one that has exited since was the served engine's: no stopped engine could start or end one."""
    mine = set(serving.pids())
    busy = [
        (owner.get(s["pid"]), s)
        for s in iso.ask("util", serving.name, since_us=since_us)["samples"]
        if s["sm"] > 0 and s["pid"] not in mine
    ]
    for name, sample in busy:
        iso.witnessed += 1
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


def not_self_stopped(e: ResidentEngine, pids: list[int]) -> None:
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
