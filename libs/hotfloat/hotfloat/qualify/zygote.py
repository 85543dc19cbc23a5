"""The fork server: a trusted process that imports torch and transformers once, then forks one fresh engine
process per request, so a run costs seconds instead of a cold import while each engine still starts clean.

It runs inside the engine sandbox (hotfloat.qualify.host), and every engine it forks inherits that sandbox. Protocol
on fd 0, a Unix SOCK_SEQPACKET socket, one JSON packet each way: {"op": "fork", "cpu_seconds": N} carrying the
engine's connected socket as an SCM_RIGHTS fd -> {"pid": N}; {"op": "sweep"} -> {"swept": true}. The forked engine
runs hotfloat.qualify.worker.main on that socket. The server itself never arms a bundle, so candidate code never
touches it; it exits when fd 0 closes (the validator ended). With `--cold` it preloads nothing, so every engine
imports everything itself after the fork (slower, and immune to any library initialising CUDA at import time).

With `--sweep` the server owns its sandbox (its own pid and IPC namespaces and private /tmp): before every fork and
on request it kills every other process in the namespace and removes what engines left in /tmp and in System V IPC,
so the engines of one server, shared across runs and qualifications, cannot pass state to each other. (/dev is
read-only in that sandbox and POSIX message queues are refused by RLIMIT_MSGQUEUE, so nothing else is shared.)
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys

from ..sandbox.reap import kill_until_gone


def _prime() -> None:
    """Serves one tiny CPU batch so transformers' and torch's lazy imports happen here once, not in the first
    engine of every qualification (which would make the first baseline run slower than the rest)."""
    from ..seams import arm
    from .engine import build_engine, serve_batch

    serve_batch(build_engine("tiny", "fp32", "cpu", 0, arm(None)), [[1, 2, 3], [4, 5]], [2, 3], lambda *a: None)


def _others() -> list[int]:
    """Live processes of this pid namespace other than its init (bubblewrap) and this server."""
    me, alive = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            alive.append(int(name))
    return alive


def _sweep(engine: int | None, owns_namespace: bool) -> None:
    """Ends the last engine and everything it started; in its own sandbox, also erases what engines left behind."""
    if engine is not None:
        try:
            os.killpg(engine, signal.SIGKILL)  # the engine called setsid, so its group is everything it started
        except (ProcessLookupError, PermissionError):
            pass
    if not owns_namespace:
        return
    if not kill_until_gone(_others, rounds=1000, pause_s=0.005):
        raise RuntimeError("engine processes survived SIGKILL")
    keep = _mounts_under("/tmp")
    for name in os.listdir("/tmp"):
        _remove(os.path.join("/tmp", name), keep)
    subprocess.run(["ipcrm", "--all"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)


def _mounts_under(root: str) -> frozenset[str]:
    """Mount points below `root`: the sandbox's own read-only binds (the Python runtime lives under /tmp when the
    checkout does), which the sweep must leave alone. Engines cannot add mounts (no capabilities, no user namespaces)."""
    with open("/proc/self/mountinfo") as f:
        points = {line.split()[4].encode().decode("unicode_escape") for line in f}
    return frozenset(p for p in points if p.startswith(root.rstrip("/") + "/"))


def _remove(path: str, keep: frozenset[str]) -> None:
    """Removes a file or tree, restoring permissions an engine may have taken away (same user, no capabilities);
    mount points in `keep` stay, and so do the directories leading to them."""
    if path in keep:
        return
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            _remove(os.path.join(path, name), keep)
        if not any(m.startswith(path + "/") for m in keep):
            os.rmdir(path)
    else:
        os.unlink(path)


def _engine(ctl: socket.socket, conn: socket.socket, cpu_seconds: int) -> None:
    """The forked child: drops the control channel (so it cannot forge replies), bounds its CPU time, serves."""
    code = 0
    try:
        ctl.close()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        limit = cpu_seconds if hard == resource.RLIM_INFINITY else min(cpu_seconds, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit))
        from . import worker

        worker.main(conn)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def serve(preload: bool, owns_namespace: bool) -> None:
    ctl = socket.socket(fileno=0)
    if preload:
        _prime()
        import torch

        if torch.cuda.is_initialized():
            raise SystemExit("fork server: CUDA was initialised before forking engines; use a cold start")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # engines are reaped automatically; sweeps end them
    engine = None
    while True:
        data, fds, _, _ = socket.recv_fds(ctl, 4096, 1)
        if not data:
            return
        request = json.loads(data)
        _sweep(engine, owns_namespace)
        engine = None
        if request["op"] == "sweep":
            ctl.send(json.dumps({"swept": True}).encode())
            continue
        conn = socket.socket(fileno=fds[0])
        pid = os.fork()
        if pid == 0:
            _engine(ctl, conn, int(request["cpu_seconds"]))
        conn.close()
        engine = pid
        ctl.send(json.dumps({"pid": pid}).encode())


if __name__ == "__main__":
    serve(preload="--cold" not in sys.argv[1:], owns_namespace="--sweep" in sys.argv[1:])
