"""The sandbox itself, probed with small stdlib-only children: what they can see, reach, write and start."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hotfloat.errors import SandboxUnavailable
from hotfloat.engine.hostload import tree
from hotfloat.sandbox import Bind, GiB, SandboxPolicy, bwrap_argv, child_env, ensure_available, spawn
from hotfloat.sandbox import process as spawn_module
from hotfloat.sandbox.mounts import python_runtime_dirs

REPO = Path(__file__).resolve().parents[2]

POLICY = SandboxPolicy(max_processes=32, address_space_bytes=2 * GiB, memory_bytes=1 * GiB, cpu_seconds=30)


def _run(tmp_path, code: str, *, policy=POLICY, sandboxed=True, binds=(), timeout=60) -> tuple[int, str]:
    """Runs `code` in a sandboxed python child; returns its exit status and combined output."""
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc = spawn(
            [sys.executable, "-I", "-c", textwrap.dedent(code)],
            policy,
            sandboxed=sandboxed,
            binds=list(binds),
            env=child_env({}, home="/tmp"),
            cwd=str(tmp_path),
            stdout=out,
        )
    try:
        rc = proc.popen.wait(timeout=timeout)
    finally:
        proc.kill()
    return rc, log.read_text()


def test_the_child_sees_only_what_it_needs(tmp_path, monkeypatch):
    monkeypatch.setenv("HOTFLOAT_WALLET_SECRET", "canary")
    rc, out = _run(
        tmp_path,
        f"""
        import os
        print(sorted(os.listdir("/")))
        print(os.path.exists("/etc/passwd"), os.path.exists("/root/.ssh"), os.path.exists({str(REPO / "libs")!r}))
        print("HOTFLOAT_WALLET_SECRET" in os.environ, os.environ["HOME"], os.getcwd())
        print(len([p for p in os.listdir("/proc") if p.isdigit()]))
    """,
    )
    lines = out.splitlines()
    assert rc == 0, out
    runtime_tops = {Path(d).parts[1] for d in python_runtime_dirs()}
    assert (
        set(eval(lines[0]))
        <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr"} | runtime_tops
    )
    assert lines[1] == "False False False"
    assert lines[2] == "False /tmp /tmp"
    assert int(lines[3]) <= 3, "a private pid namespace shows only the sandbox's own processes"


def test_no_network_and_no_host_sockets(tmp_path):
    rc, out = _run(
        tmp_path,
        """
        import socket
        for target in (("1.1.1.1", 53), ("127.0.0.1", 22)):
            try:
                socket.create_connection(target, timeout=2)
                print("connected")
            except OSError as e:
                print(type(e).__name__)
        print(sorted(n.split()[0] for n in open("/proc/net/dev").read().splitlines()[2:]))
    """,
    )
    assert rc == 0 and "connected" not in out, out
    assert out.splitlines()[-1] == "['lo:']"


def test_binds_are_read_only_and_writes_stay_private(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "k.py").write_text("x = 1\n")
    rc, out = _run(
        tmp_path,
        """
        for path in ("/bundle/k.py", "/bundle/new.py", "/usr/evil", "/tmp/ok", "/evil"):
            try:
                open(path, "a").write("pwned")
                print(path, "written")
            except OSError as e:
                print(path, type(e).__name__)
    """,
        binds=[Bind(shared, "/bundle")],
    )
    assert rc == 0, out
    assert "/tmp/ok written" in out and out.count("written") == 1, out
    assert (shared / "k.py").read_text() == "x = 1\n" and sorted(os.listdir(shared)) == ["k.py"]


def test_a_fork_bomb_hits_the_process_bound_and_is_cleaned_up(tmp_path):
    marker = f"bomb-{os.getpid()}-{time.time_ns()}"
    started = time.monotonic()
    rc, out = _run(
        tmp_path,
        f"""
        import os, time
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
    )
    assert time.monotonic() - started < 30
    forks = int(out.split()[1])
    assert 0 < forks < POLICY.max_processes, out
    time.sleep(0.2)
    leftover = [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in _cmdline(p)]
    assert leftover == [], "every descendant is killed with the sandbox"


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_memory_and_file_size_are_bounded(tmp_path):
    rc, out = _run(
        tmp_path,
        """
        try:
            hog = bytearray(4 * 2**30)
            print("allocated")
        except MemoryError:
            print("MemoryError")
        try:
            with open("/tmp/big", "wb") as f:
                f.write(b"\\0" * (300 * 2**20))
            print("wrote")
        except OSError as e:
            print(type(e).__name__)
    """,
        policy=POLICY.model_copy(update={"max_file_bytes": 8 << 20}),
    )
    assert "MemoryError" in out and "wrote" not in out, (rc, out)


def test_a_spinning_child_is_killed_with_all_its_processes(tmp_path):
    log = tmp_path / "spin.log"
    with open(log, "wb") as out:
        proc = spawn(
            [sys.executable, "-I", "-c", "import os\nos.fork()\nwhile True: pass"],
            POLICY,
            sandboxed=True,
            binds=[],
            env=child_env({}, home="/tmp"),
            cwd=str(tmp_path),
            stdout=out,
        )
    time.sleep(0.5)
    cgroups = proc.cgroup.dirs if proc.cgroup else []
    rc = proc.kill()
    assert rc is not None and rc != 0
    assert all(not d.exists() for d in cgroups), "the per-child cgroups are removed"


def test_fail_closed_without_bubblewrap(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    spawn_module._probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="unsandboxed"):
            ensure_available(POLICY)
    finally:
        monkeypatch.undo()
        spawn_module._probe.cache_clear()
    ensure_available(POLICY)


def test_unsandboxed_is_logged_loudly(tmp_path, caplog):
    rc, out = _run(tmp_path, "print('hi')", sandboxed=False)
    assert rc == 0 and "hi" in out
    assert "UNSANDBOXED" in caplog.text


def test_the_probe_uses_real_namespaces():
    r = subprocess.run(["bwrap", "--version"], capture_output=True, text=True)
    assert r.returncode == 0
    ensure_available(POLICY)


def test_a_bubblewrap_outside_the_system_path_is_used_by_its_absolute_path(tmp_path, monkeypatch):
    """Device hosts carry bwrap unpacked from a .deb into a payload directory; the launcher's own PATH is minimal."""
    carried = tmp_path / "payload" / "usr" / "bin"
    carried.mkdir(parents=True)
    (carried / "bwrap").symlink_to(subprocess.run(["which", "bwrap"], capture_output=True, text=True).stdout.strip())
    monkeypatch.setenv("PATH", f"{carried}:/usr/bin:/bin")
    assert bwrap_argv(POLICY, ["true"], binds=[], env={})[0] == str(carried / "bwrap")
    rc, out = _run(tmp_path, "print('inside')")
    assert rc == 0 and "inside" in out


@pytest.mark.parametrize("sandboxed", [False, True])
def test_a_child_dies_with_a_validator_killed_by_sigterm(tmp_path, sandboxed):
    if sandboxed:
        try:
            ensure_available(POLICY)
        except SandboxUnavailable as e:
            pytest.skip(f"no sandbox on this host: {e}")
    code = f"""
        import sys, time
        from hotfloat.sandbox import child_env, spawn
        from tests.sandbox.test_spawn import POLICY
        proc = spawn([sys.executable, "-I", "-c", "import time; time.sleep(120)"], POLICY, sandboxed={sandboxed},
                     binds=[], env=child_env({{}}, home="/tmp"), cwd={str(tmp_path)!r})
        print(proc.pid, flush=True)
        time.sleep(120)
    """
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while len(procs := tree(child)) < (3 if sandboxed else 1) and time.monotonic() < deadline:
            time.sleep(0.05)  # the sandbox's inner processes (bwrap's pid 1, the python) start after the outer one
        assert all(map(_alive, procs)), "the child should run while its validator does"
        parent.terminate()  # SIGTERM: Python exits without running finally blocks
        parent.wait(10)
        deadline = time.monotonic() + 10
        while any(map(_alive, procs)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_alive, procs)), "the child outlived its validator"
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
