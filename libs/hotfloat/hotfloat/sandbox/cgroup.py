"""A throwaway cgroup per child: bounds processes and memory, and lets us kill every descendant at once.

v1 hosts: one group per controller under our own. v2 hosts: a group under a parent whose `cgroup.subtree_control`
enables pids and memory; as root we make that parent ourselves (see `v2_parent`). Callers learn which bounds hold
through `bounds`, so the fallback for processes (an unprivileged uid under RLIMIT_NPROC) is chosen knowingly.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from .policy import SandboxPolicy
from .reap import kill_until_gone

ROOT = Path("/sys/fs/cgroup")
WANT = ("pids", "memory")
SUBTREE = "hotfloat"
"""The parent of every per-child group on a v2 host when our own group cannot delegate (it holds processes)."""
HOST_LEAF = "hotfloat-host"
"""Where the processes of a v2 namespace root are moved so the root may enable controllers for its children (v2
forbids controllers in the subtree of a group that itself holds processes; only the real root is exempt)."""


def own_paths() -> dict[str, str]:
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


def v2_root() -> Path | None:
    """The v2 hierarchy's mount: /sys/fs/cgroup on a pure v2 host, /sys/fs/cgroup/unified on a hybrid one."""
    for p in (ROOT, ROOT / "unified"):
        if (p / "cgroup.controllers").exists():
            return p
    return None


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _enable(group: Path, controllers: tuple[str, ...]) -> bool:
    """Enables `controllers` for the children of `group`; True when all of them are enabled afterwards."""
    for c in controllers:
        if c not in _words(group / "cgroup.subtree_control"):
            try:
                (group / "cgroup.subtree_control").write_text(f"+{c}")
            except OSError:
                return False
    return True


def _evacuate(group: Path) -> bool:
    """Moves every process of `group` into its leaf HOST_LEAF (racing forks are retried); True when it is empty."""
    leaf = group / HOST_LEAF
    try:
        leaf.mkdir(exist_ok=True)
    except OSError:
        return False
    for _ in range(20):
        pids = _words(group / "cgroup.procs")
        if not pids:
            return True
        for pid in pids:
            try:
                (leaf / "cgroup.procs").write_text(pid)
            except OSError:
                continue
    return not _words(group / "cgroup.procs")


def v2_parent(root: Path, own: str, controllers: tuple[str, ...], *, privileged: bool) -> Path | None:
    """A group whose children get `controllers`, or None. Our own group when it already delegates them (a systemd
    `Delegate=` unit); else, as root, `root/hotfloat` with the controllers enabled down from `root`. When `root`
    holds processes itself (a container's namespace root) they first move into `root/hotfloat-host`, as container
    runtimes do for nested containers. Only controllers the host offers (`cgroup.controllers`) can be enabled."""
    if not set(controllers) <= _words(root / "cgroup.controllers"):
        return None
    mine = root / own.lstrip("/")
    if mine != root and set(controllers) <= _words(mine / "cgroup.subtree_control"):
        return mine
    if not privileged:
        return None
    if not _enable(root, controllers) and not (_evacuate(root) and _enable(root, controllers)):
        return None
    parent = root / SUBTREE
    try:
        parent.mkdir(exist_ok=True)
    except OSError:
        return None
    return parent if _enable(parent, controllers) else None


class Cgroup:
    """The per-child groups that could be created, each with its limit already written."""

    def __init__(self, dirs: list[Path], bounds: set[str], version: str = ""):
        self.dirs = dirs
        self.bounds = bounds
        """Which of "pids" and "memory" are enforced."""
        self.version = version
        """"cgroup-v1" or "cgroup-v2" when a group bounds anything, else ""."""

    @classmethod
    def create(cls, policy: SandboxPolicy, *, v2: Path | None = None, v1: Path | None = ROOT) -> Cgroup:
        """Best effort: every controller that refuses us is simply absent from `bounds`. Tests pass a v2 mount of
        their own as `v2` (and `v1=None`)."""
        name = f"hotfloat-{uuid.uuid4().hex[:12]}"
        own = own_paths()
        dirs: list[Path] = []
        bounds: set[str] = set()
        versions: list[str] = []
        v1_knobs = {
            "pids": ("pids.max", str(policy.max_processes)),
            "memory": ("memory.limit_in_bytes", str(policy.memory_bytes)),
        }
        for controller, (knob, value) in v1_knobs.items():
            if v1 is not None and controller in own and (v1 / controller).is_dir():
                d = v1 / controller / own[controller].lstrip("/") / name
                if _make(d, {knob: value}):
                    dirs.append(d)
                    bounds.add(controller)
                    versions = ["cgroup-v1"]
        missing = tuple(c for c in WANT if c not in bounds)
        root = v2 if v2 is not None else v2_root()
        if missing and root is not None and "" in own:
            own_v2 = "/" if v2 is not None else own[""]
            parent = v2_parent(root, own_v2, missing, privileged=os.geteuid() == 0)
            knobs = {
                "pids": {"pids.max": str(policy.max_processes)},
                "memory": {"memory.max": str(policy.memory_bytes), "memory.swap.max": "0"},
            }
            want = {k: v for c in missing for k, v in knobs[c].items()}
            if parent is not None and _make(parent / name, want, optional={"memory.swap.max"}):
                dirs.append(parent / name)
                bounds |= set(missing)
                versions.append("cgroup-v2")
        return cls(dirs, bounds, "+".join(versions))

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def kill_all(self) -> None:
        """SIGKILLs every member until the groups are empty; a fork bomb cannot outrun its pids bound."""
        for d in self.dirs:
            try:
                (d / "cgroup.kill").write_text("1")  # v2 (Linux 5.14+): the kernel kills the whole group at once
            except OSError:
                pass
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


def _make(d: Path, knobs: dict[str, str], optional: set[str] = frozenset()) -> bool:
    try:
        d.mkdir()
    except OSError:
        return False
    try:
        for knob, value in knobs.items():
            try:
                (d / knob).write_text(value)
            except OSError:
                if knob not in optional:
                    raise
        return True
    except OSError:
        try:
            d.rmdir()
        except OSError:
            pass
        return False
