"""A throwaway cgroup per child: bounds processes and memory, and lets us kill every descendant at once.

Used where the host lets us create one (cgroup v1 controllers or a delegated v2 subtree); callers learn
which bounds hold through `bounds`, so the process-count fallback (RLIMIT_NPROC) is chosen knowingly.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from .policy import SandboxPolicy
from .reap import kill_until_gone

ROOT = Path("/sys/fs/cgroup")


def _own_paths() -> dict[str, str]:
    """Controller -> our cgroup path, from /proc/self/cgroup; the v2 hierarchy is keyed ""."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            paths[c] = path
    return paths


class Cgroup:
    """The per-child groups that could be created, each with its limit already written."""

    def __init__(self, dirs: list[Path], bounds: set[str]):
        self.dirs = dirs
        self.bounds = bounds
        """Which of "pids" and "memory" are enforced."""

    @classmethod
    def create(cls, policy: SandboxPolicy) -> Cgroup:
        """Best effort: every controller that refuses us is simply absent from `bounds`."""
        name = f"hotfloat-{uuid.uuid4().hex[:12]}"
        own = _own_paths()
        dirs: list[Path] = []
        bounds: set[str] = set()
        v1 = {"pids": ("pids.max", str(policy.max_processes)), "memory": ("memory.limit_in_bytes", str(policy.memory_bytes))}
        for controller, (knob, value) in v1.items():
            if controller in own and (ROOT / controller).is_dir():
                d = ROOT / controller / own[controller].lstrip("/") / name
                if _make(d, {knob: value}):
                    dirs.append(d)
                    bounds.add(controller)
        if "" in own and (ROOT / "cgroup.controllers").exists() and bounds != {"pids", "memory"}:
            d = ROOT / own[""].lstrip("/") / name
            want = {"pids.max": str(policy.max_processes), "memory.max": str(policy.memory_bytes)}
            if _make(d, {k: v for k, v in want.items() if k.split(".")[0] not in bounds}):
                dirs.append(d)
                bounds |= {"pids", "memory"}
        return cls(dirs, bounds)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def kill_all(self) -> None:
        """SIGKILLs every member until the groups are empty; a fork bomb cannot outrun its pids bound."""
        kill_until_gone(self._members, rounds=200, pause_s=0.01)

    def _members(self) -> set[int]:
        pids: set[int] = set()
        for f in self.procs_files:
            try:
                pids.update(int(p) for p in Path(f).read_text().split())
            except OSError:
                continue
        return pids

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _make(d: Path, knobs: dict[str, str]) -> bool:
    try:
        d.mkdir()
    except OSError:
        return False
    try:
        for knob, value in knobs.items():
            (d / knob).write_text(value)
        return True
    except OSError:
        try:
            d.rmdir()
        except OSError:
            pass
        return False
