"""The cgroup v2 path and the uid fallback, on a real cgroup2 mount and real children.

On a v1/hybrid host (this machine, CI) the v2 hierarchy offers no pids or memory controller (v1 holds them), so the
v2 machinery is proved with a controller it does offer, and the decision that follows (no pids bound as root ->
a fresh unprivileged uid under RLIMIT_NPROC) is run for real: a fork bomb stops at the bound.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hotfloat.sandbox import Bind, GiB, SandboxPolicy, child_env, spawn
from hotfloat.sandbox import cgroup as cg
from hotfloat.sandbox import process as spawn_module

POLICY = SandboxPolicy(max_processes=32, address_space_bytes=2 * GiB, memory_bytes=1 * GiB, cpu_seconds=30)


@pytest.fixture
def v2(tmp_path):
    """A cgroup2 mount of this host's v2 hierarchy with one spare controller, or a skip where none can be had."""
    mnt = tmp_path / "cg2"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "cgroup2", "none", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a cgroup2 hierarchy here")
    spare = sorted(c for c in (mnt / "cgroup.controllers").read_text().split() if c not in cg.WANT)
    try:
        if any(c in cg.WANT for c in (mnt / "cgroup.controllers").read_text().split()) or not spare:
            pytest.skip("this host's v2 hierarchy is in use (pure v2): its own spawn tests cover it")
        yield mnt, spare[0]
    finally:
        for top in (mnt / cg.SUBTREE, mnt / "ns"):
            _remove_tree(mnt, top)
        subprocess.run(["umount", str(mnt)], check=True)


def _remove_tree(mnt: Path, group: Path) -> None:
    """Removes a test's groups bottom-up, moving any process left in them back to the root first."""
    if not group.is_dir():
        return
    for child in [c for c in group.iterdir() if c.is_dir()]:
        _remove_tree(mnt, child)
    for pid in (group / "cgroup.procs").read_text().split():
        (mnt / "cgroup.procs").write_text(pid)
    group.rmdir()


def test_v2_parent_enables_the_controllers_down_a_subtree_of_its_own(v2):
    mnt, spare = v2
    parent = cg.v2_parent(mnt, "/", (spare,), privileged=True)
    assert parent == mnt / cg.SUBTREE
    assert spare in (parent / "cgroup.subtree_control").read_text().split()
    child = parent / "hotfloat-test"
    child.mkdir()
    assert any(f.name.startswith(f"{spare}.") for f in child.iterdir()), "the child group carries the controller"


def test_a_namespace_root_holding_processes_is_evacuated_only_when_privileged(v2):
    mnt, spare = v2
    (mnt / "cgroup.subtree_control").write_text(f"+{spare}")
    ns = mnt / "ns"
    ns.mkdir()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (ns / "cgroup.procs").write_text(str(sleeper.pid))
        assert cg.v2_parent(ns, "/", (spare,), privileged=False) is None
        assert (ns / "cgroup.procs").read_text().split() == [str(sleeper.pid)], "nothing moves unprivileged"
        assert cg.v2_parent(ns, "/", (spare,), privileged=True) == ns / cg.SUBTREE
        assert (ns / cg.HOST_LEAF / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_delegating_own_group_is_used_as_it_is_even_unprivileged(v2):
    """A systemd `Delegate=yes` unit: the validator's own group already enables the controllers for its children."""
    mnt, spare = v2
    (mnt / "cgroup.subtree_control").write_text(f"+{spare}")
    own = mnt / "ns"
    own.mkdir()
    (own / "cgroup.subtree_control").write_text(f"+{spare}")
    assert cg.v2_parent(mnt, "/ns", (spare,), privileged=False) == own
    assert not (mnt / cg.SUBTREE).exists(), "nothing is made outside the delegated group"


def test_without_v2_controllers_nothing_is_bounded(v2):
    mnt, _ = v2
    group = cg.Cgroup.create(POLICY, v2=mnt, v1=None)
    assert group.bounds == set() and group.dirs == [] and group.version == ""


@pytest.fixture
def no_pids_cgroup(v2, monkeypatch):
    """spawn on this host as if it were a v2 host that offers no pids controller: the real v2 mount, no v1."""
    mnt, _ = v2
    create = cg.Cgroup.create
    monkeypatch.setattr(spawn_module.Cgroup, "create", lambda policy: create(policy, v2=mnt, v1=None))


def _run(tmp_path, code: str, binds=()) -> tuple[int, str, frozenset]:
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc = spawn(
            [sys.executable, "-I", "-c", textwrap.dedent(code)],
            POLICY,
            sandboxed=True,
            binds=list(binds),
            env=child_env({}, home="/tmp"),
            cwd=str(tmp_path),
            stdout=out,
        )
    try:
        rc = proc.popen.wait(timeout=60)
    finally:
        proc.kill()
    return rc, log.read_text(), proc.bounds


def test_as_root_without_a_pids_cgroup_the_child_runs_as_a_fresh_uid_and_a_fork_bomb_stops(tmp_path, no_pids_cgroup):
    marker = f"uidbomb-{os.getpid()}-{time.time_ns()}"
    work = tmp_path / "work"
    work.mkdir()
    rc, out, bounds = _run(
        tmp_path,
        f"""
        import os, time
        open("/scratch/written", "w").write("x")
        print("uid", os.getuid())
        n = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                n += 1
        except OSError:
            print("forks", n, {marker!r})
    """,
        binds=[Bind(work, "/scratch", writable=True)],
    )
    assert {"uid-drop", "pids", "seccomp", "namespaces"} <= bounds and "memory" not in bounds, bounds
    uid = int(out.split("uid ")[1].split()[0])
    assert uid != 0 and (work / "written").stat().st_uid != 0, out
    forks = int(out.split("forks ")[1].split()[0])
    assert 0 < forks < POLICY.max_processes, out
    time.sleep(0.2)
    leftover = [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in _cmdline(p)]
    assert leftover == []


def test_fail_closed_when_neither_a_pids_cgroup_nor_a_uid_drop_is_possible(tmp_path, no_pids_cgroup, monkeypatch):
    monkeypatch.setattr(spawn_module, "_probe_uid", lambda: "setpriv (util-linux) is not installed")
    with pytest.raises(spawn_module.SandboxUnavailable, match="cannot bound the child's process count"):
        _run(tmp_path, "print('never')")


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
