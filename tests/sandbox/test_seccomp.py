"""The seccomp filter, probed from real sandboxed children: each denied call fails with EPERM under the filter and
does something else in the same sandbox without it, while threads, forks and pipes keep working."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap

import pytest

from hotfloat.sandbox import GiB, SandboxPolicy, bwrap_argv, child_env, spawn
from hotfloat.sandbox.seccomp import DENIED, filter_bpf

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe uses x86_64 syscall numbers")

POLICY = SandboxPolicy(max_processes=32, address_space_bytes=2 * GiB, memory_bytes=1 * GiB, cpu_seconds=30)

PROBE = textwrap.dedent("""
    import ctypes, json, os, threading
    libc = ctypes.CDLL(None, use_errno=True)
    def call(nr, *args):
        ctypes.set_errno(0)
        r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
        return os.strerror(ctypes.get_errno()) if r == -1 else "ok"
    t = threading.Thread(target=lambda: None); t.start(); t.join()
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    out = {"fork_and_thread": os.waitpid(pid, 0)[1] >> 8}
    out |= {
        "keyctl": call(250, 0, -3, 0),                       # KEYCTL_GET_KEYRING_ID of the session keyring
        "add_key": call(248, 0, 0, 0, 0, 0),
        "bpf": call(321, 0, 0, 0),
        "mount": call(165, 0, 0, 0, 0, 0),
        "unshare": call(272, 0x20000),                       # CLONE_NEWNS
        "setns": call(308, 0, 0),
        "clone_newuser": call(56, 0x10000000 | 17, 0, 0, 0, 0),
        "clone3": call(435, 0, 0),
        "userfaultfd": call(323, 0),
        "perf_event_open": call(298, 0, 0, -1, -1, 0),
        "process_vm_readv": call(310, 1, 0, 0, 0, 0, 0),
        "ptrace": call(101, 0, 0, 0, 0),                     # PTRACE_TRACEME, last: a traced process stops on signals
    }
    print(json.dumps(out))
""")


def _sandboxed(tmp_path) -> dict:
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc = spawn(
            [sys.executable, "-I", "-c", PROBE],
            POLICY,
            sandboxed=True,
            binds=[],
            env=child_env({}, home="/tmp"),
            cwd=str(tmp_path),
            stdout=out,
        )
    try:
        assert proc.popen.wait(timeout=60) == 0, log.read_text()
    finally:
        proc.kill()
    assert "seccomp" in proc.bounds
    return json.loads(log.read_text().splitlines()[-1])


def test_denied_calls_fail_with_eperm_and_ordinary_work_goes_on(tmp_path):
    got = _sandboxed(tmp_path)
    denied = {k: v for k, v in got.items() if k not in ("clone3", "fork_and_thread")}
    assert set(denied.values()) == {"Operation not permitted"}, got
    assert got["clone3"] == "Function not implemented", "clone3 is refused so libc falls back to a checkable clone"
    assert got["fork_and_thread"] == 7


def test_without_the_filter_the_same_sandbox_allows_some_of_them():
    """The control: the same namespaces without `--seccomp` let ptrace and keyctl through, so the EPERMs above
    are the filter's doing, not a side effect of the namespaces."""
    argv = bwrap_argv(POLICY, [sys.executable, "-I", "-c", PROBE], binds=[], env=child_env({}, home="/tmp"))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    got = json.loads(r.stdout.splitlines()[-1])
    assert got["ptrace"] == "ok" and got["keyctl"] == "ok", got
    assert got["clone3"] != "Function not implemented"


def test_every_denied_name_is_known_to_this_libseccomp():
    bpf, unknown = filter_bpf()
    assert unknown == () and len(bpf) >= 8 * len(DENIED)
