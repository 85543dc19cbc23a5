"""Pids between this pid namespace and the host's: NVML and the checkpoint lock speak the node's pids, while a
qualification runner in a pod sees its own. With the node's procfs mounted read-only (HOTFLOAT_HOST_PROC, e.g. a
hostPath of /proc at /host/proc), each process's `NSpid` line gives its pid in every namespace from the node's
down; a process is this namespace's (or a sandbox's below it) when its parent chain on the node reaches this
namespace's init, so another pod's pid 1 is never taken for ours."""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOST_PROC = "HOTFLOAT_HOST_PROC"
MAX_DEPTH = 64


class PidMap:
    """Maps this namespace's pids to the node's and back, read off the node's procfs at `host_proc`."""

    def __init__(self, host_proc: str | os.PathLike):
        self.proc = Path(host_proc)
        me = self._find(os.getpid(), _starttime(Path("/proc/self/stat")))
        if me is None:
            raise RuntimeError(f"{self.proc} holds no process that is this one: it is not the node's procfs")
        self.depth = len(self._nspid(me)) - 1
        root, steps = me, 0
        while self._nspid(root)[self.depth] != 1:  # up to this namespace's init
            root, steps = self._ppid(root), steps + 1
            if root <= 0 or steps > MAX_DEPTH:
                raise RuntimeError("this namespace's init is not among the node's processes")
        self.root = root
        self._host: dict[int, int] = {}

    def to_local(self, host: int) -> int | None:
        """This namespace's pid of the node's process `host`, or None when the process is not ours."""
        try:
            ns = self._nspid(host)
            if len(ns) <= self.depth or not self._ours(host):
                return None
        except OSError:
            return None
        return ns[self.depth]

    def to_host(self, local: int) -> int | None:
        """The node's pid of this namespace's process `local`, or None when it is gone."""
        host = self._host.get(local)
        if host is None or self.to_local(host) != local:
            self._host = {}
            for entry in self.proc.iterdir():
                if entry.name.isdigit() and (mine := self.to_local(int(entry.name))) is not None:
                    self._host[mine] = int(entry.name)
            host = self._host.get(local)
        return host

    def _ours(self, host: int) -> bool:
        p = host
        for _ in range(MAX_DEPTH):
            if p == self.root:
                return True
            if p <= 1:
                return False
            p = self._ppid(p)
        return False

    def _nspid(self, host: int) -> list[int]:
        for line in (self.proc / str(host) / "status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
        raise OSError(f"no NSpid line for {host}")

    def _ppid(self, host: int) -> int:
        for line in (self.proc / str(host) / "status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
        raise OSError(f"no PPid line for {host}")

    def _find(self, local: int, started: int) -> int | None:
        """The node's pid of this process: the one whose innermost pid is `local` and that started when it did."""
        for entry in self.proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if self._nspid(int(entry.name))[-1] == local and _starttime(entry / "stat") == started:
                    return int(entry.name)
            except OSError:
                continue
        return None


def _starttime(stat: Path) -> int:
    """Field 22 of /proc/<pid>/stat: the start time in clock ticks since boot (the same in every namespace)."""
    text = stat.read_text()
    return int(text[text.rindex(")") + 2 :].split()[19])


def from_env() -> PidMap | None:
    """The map HOTFLOAT_HOST_PROC configures, or None (the node's pids are this process's own)."""
    where = os.environ.get(ENV_HOST_PROC)
    return PidMap(where) if where else None
