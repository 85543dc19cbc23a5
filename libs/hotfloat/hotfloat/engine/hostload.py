"""What the host did around a timed pass, read by the validator from /proc and NVML: the CPU seconds an engine's
whole process tree used, the CPU time the hypervisor stole from this machine, and the GPU's SM clock.

Why: a slow pass is noise the rule must pay for; these readings say whose it was. A pass that took longer with the
engine's own CPU seconds up points at the engine (a collector pause, a thread pool); stolen time up points at the
host under this virtual machine; a lower SM clock points at the GPU's power management. They are diagnostics for
calibration (the raw record keeps them per pass), never inputs to a verdict, and are read outside timed windows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..sandbox import gpus

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Reading:
    """Cumulative counters at one instant; subtract two to get a pass's share."""

    tree_cpu_s: float
    steal_s: float
    sm_clock_mhz: float

    def since(self, before: Reading) -> dict[str, float]:
        return {
            "cpu_s": round(self.tree_cpu_s - before.tree_cpu_s, 4),
            "steal_s": round(self.steal_s - before.steal_s, 4),
            "sm_mhz": self.sm_clock_mhz,
        }


def read(root_pid: int) -> Reading:
    return Reading(tree_cpu_s(root_pid), steal_s(), sm_clock_mhz())


def tree_cpu_s(root_pid: int) -> float:
    """User plus system seconds of `root_pid` and every live descendant (all their threads); 0 if it is gone."""
    return sum(tree(root_pid).values())


def tree(root_pid: int) -> dict[int, float]:
    """`root_pid` and every live descendant, each with its CPU seconds so far; empty if it is gone."""
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        if fields is None:
            continue  # exited while we looked
        parent[int(name)] = int(fields[1])
        used[int(name)] = (int(fields[11]) + int(fields[12])) * TICK_S
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, [root_pid] if root_pid in used else []
    while todo:
        pid = todo.pop()
        found[pid] = used[pid]
        todo += children.get(pid, [])
    return found


def state(pid: int) -> str | None:
    """The process's one-letter /proc state (R, S, D, T, Z, ...); None once it is gone."""
    fields = _stat(pid)
    return fields[0] if fields else None


def alive(pid: int) -> bool:
    """Whether the process still runs or can run again (a zombie has exited and given its GPU context back)."""
    return state(pid) not in (None, "Z", "X")


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name (which may hold spaces and parentheses): state, ppid, ...; None once
    the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def steal_s() -> float:
    """Seconds stolen from this machine's CPUs by the hypervisor since boot (/proc/stat); 0 where not reported."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * TICK_S if fields[0] == "cpu" and len(fields) > 8 else 0.0
    except (OSError, ValueError):
        return 0.0


_NVML: list = []


def sm_clock_mhz() -> float:
    """The SM clock of the GPU this process's CUDA device 0 is, through NVML (nvidia-ml-py); 0 where NVML is absent
    or the GPU cannot be placed."""
    if not _NVML:
        try:
            import pynvml

            pynvml.nvmlInit()
            _NVML.append((pynvml, nvml_handle(pynvml)))
        except Exception:  # no NVML library, no GPU, no permission: the reading is simply unavailable
            _NVML.append(None)
    if _NVML[0] is None or _NVML[0][1] is None:
        return 0.0
    nvml, handle = _NVML[0]
    try:
        return float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
    except Exception:
        return 0.0


def nvml_handle(nvml, env: Mapping[str, str] = os.environ, root: Path = gpus.PROC_GPUS):
    """NVML's handle on CUDA's device 0. NVML numbers GPUs physically and CUDA after CUDA_VISIBLE_DEVICES, so a
    process restricted to some GPUs (`serve --gpu N`) finds its GPU by UUID; without the variable it is NVML's GPU 0
    (the same GPU on a one-GPU host or pod); None where the variable's GPU cannot be placed."""
    if "CUDA_VISIBLE_DEVICES" not in env:
        return nvml.nvmlDeviceGetHandleByIndex(0)
    chosen = gpus.visible(env, gpus.installed(root))
    return nvml.nvmlDeviceGetHandleByUUID(chosen[0].uuid) if chosen else None
