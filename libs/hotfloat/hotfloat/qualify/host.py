"""Where qualification engines run: fork servers inside the candidate sandbox, and the staged bundles they arm.

Every engine is forked by a fork server (hotfloat.qualify.zygote) started through `hotfloat.sandbox.spawn`, and
inherits its sandbox: no network, system and Python runtime read-only, the hotfloat package read-only at
/hotfloat-lib, the staged bundles read-only at /bundles, a private /tmp, /dev read-only, an allowlisted environment
(no secrets), bounded processes, open files and memory, and CPU time bounded per engine by its run's budget; CUDA
servers get the gpu policy (device nodes, no address-space limit). An engine's channel is one end of a socketpair
passed to the server as a file descriptor, so no socket path is shared with the validator.

One warm CPU server per mode is shared by all runs and qualifications, because a preload costs seconds (6 to 13
here): it holds one engine at a time and sweeps its sandbox between engines (kills every other process, empties
/tmp and System V IPC); a server whose sweep fails is discarded with its sandbox. A fresh server per qualification
would still share /tmp between its own B and C runs, so the sweep is needed either way. Cold servers (every CUDA
run, or warm=False) live for one engine.

Bundles are staged in one process-wide directory whose root the sandbox cannot list (mode 0311, and the sandbox
has no capability to override it), each qualification under 128 random bits, so an engine can reach the bundles it
was told to arm and not another qualification's.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..bundle import Bundle
from ..sandbox import Bind, GiB, SandboxPolicy, child_env, log_tail, spawn

PACKAGE = Path(__file__).resolve().parents[1]
LIB, BUNDLES = "/hotfloat-lib", "/bundles"
SERVER_CPU_S = 4 * 3600
"""RLIMIT_CPU of a fork server: it only imports and forks; each engine lowers its own limit to its run's budget."""


class ServerFault(Exception):
    """The fork server died, stalled or answered nonsense: the run fails, the server is discarded."""


def server_policy(device: str) -> SandboxPolicy:
    """The engine sandbox's bounds; engines share them with the server that forked them."""
    cuda = device == "cuda"
    return SandboxPolicy(gpu=cuda, address_space_bytes=None if cuda else 16 * GiB, memory_bytes=(32 if cuda else 8) * GiB,
                         cpu_seconds=SERVER_CPU_S, writable_dev=False)


class ForkServer:
    """One hotfloat.qualify.zygote process in its own sandbox (or unsandboxed, when the caller said so).

    CPU engines need TRITON_INTERPRET=1 before triton is first imported (triton.language's own jit helpers are
    built at import time), so a server serves one device type; for CUDA, availability checks go through NVML so
    that no import initialises CUDA before the fork."""

    def __init__(self, device: str, *, preload: bool, sandboxed: bool):
        self._dir = Path(tempfile.mkdtemp(prefix="hotfloat-engines-"))
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        extra = {"TRITON_INTERPRET": "1"} if device == "cpu" else {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
        if sandboxed:
            home, binds = "/tmp", [Bind(PACKAGE, f"{LIB}/hotfloat"), Bind(_stage_root(), BUNDLES)]
            extra["PYTHONPATH"] = LIB
        else:
            home, binds = str(self._dir), []
            extra["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
        extra["TRITON_CACHE_DIR"] = f"{home}/triton"
        argv = [sys.executable, "-m", "hotfloat.qualify.zygote", *([] if preload else ["--cold"]),
                *(["--sweep"] if sandboxed else [])]
        try:
            with open(self._dir / "server.log", "wb") as log:
                self.proc = spawn(argv, server_policy(device), sandboxed=sandboxed, binds=binds,
                                  env=child_env(extra, home=home), cwd=str(self._dir), stdin=theirs.fileno(), stdout=log)
        except BaseException:
            self.ctl.close()
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        finally:
            theirs.close()

    def fork(self, conn: socket.socket, cpu_seconds: int, timeout_s: float) -> int:
        """Has the server fork an engine serving `conn`; returns its pid inside the server's namespace."""
        request = json.dumps({"op": "fork", "cpu_seconds": cpu_seconds}).encode()
        pid = self._ask(request, [conn.fileno()], timeout_s).get("pid")
        if type(pid) is not int or pid <= 1:
            raise ServerFault(f"the fork server answered with an invalid pid {pid!r}")
        return pid

    def sweep(self, timeout_s: float = 30.0) -> bool:
        """Ends the last engine and everything it left; False when the server can no longer be trusted to."""
        try:
            return self._ask(b'{"op": "sweep"}', [], timeout_s).get("swept") is True
        except ServerFault:
            return False

    def _ask(self, request: bytes, fds: list[int], timeout_s: float) -> dict:
        self.ctl.settimeout(timeout_s)
        try:
            socket.send_fds(self.ctl, [request], fds)
            reply = self.ctl.recv(4096)
        except TimeoutError:
            raise ServerFault(f"the fork server did not answer within {timeout_s:.0f} s") from None
        except OSError as e:
            reply = b""
            if self.alive:
                raise ServerFault(f"the fork server's channel broke: {e}") from None
        if not reply:
            raise ServerFault(f"the fork server exited ({self.proc.popen.poll()}): {self.log_tail()}")
        try:
            answer = json.loads(reply)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise ServerFault("the fork server sent a malformed reply")
        return answer

    @property
    def alive(self) -> bool:
        return self.proc.popen.poll() is None

    def log_tail(self) -> str:
        """The end of the server's and its engines' output, for diagnostics only."""
        return log_tail(self._dir / "server.log")

    def close(self) -> None:
        """Closes the channel (the server exits), then kills whatever is left of its sandbox."""
        self.ctl.close()
        try:
            self.proc.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.proc.kill()
        shutil.rmtree(self._dir, ignore_errors=True)


_WARM: dict[tuple[str, bool], ForkServer] = {}
_TURNS: dict[tuple[str, bool], threading.Lock] = {}
_LOCK = threading.Lock()


@contextmanager
def engine_server(device: str, *, warm: bool, sandboxed: bool) -> Iterator[ForkServer]:
    """A fork server for one engine run: the shared preloaded one on CPU when warm, else a cold one for this run.

    The shared server holds one engine at a time, so a concurrent qualification's run waits for its turn (on a CPU,
    overlapping runs would disturb each other's timing anyway). On CUDA every engine starts cold, because engines
    forked from a warm server failed their first CUDA call with cudaErrorInitializationError on the H200 (measured
    2026-12-02)."""
    if not warm or device != "cpu":
        server = ForkServer(device, preload=False, sandboxed=sandboxed)
        try:
            yield server
        finally:
            server.sweep()  # unsandboxed, the engine's own session is outside the server's process group
            server.close()
        return
    key = (device, sandboxed)
    with _LOCK:
        turn = _TURNS.setdefault(key, threading.Lock())
    with turn:
        server = _WARM.get(key)
        if server is None or not server.alive:
            if server is not None:
                server.close()
            if not _WARM:
                atexit.register(_close_warm)
            server = _WARM[key] = ForkServer(device, preload=True, sandboxed=sandboxed)
        try:
            yield server
        finally:
            if not server.sweep():
                server.close()
                del _WARM[key]


def _close_warm() -> None:
    for server in _WARM.values():
        server.close()
    _WARM.clear()


@contextmanager
def staged(bundles: dict[str, Bundle], *, sandboxed: bool) -> Iterator[dict[str, str]]:
    """Writes the bundles under a fresh unguessable directory; yields name -> path as the engines see it."""
    token = secrets.token_hex(16)
    host = _stage_root() / token
    try:
        for name, bundle in bundles.items():
            for rel, data in bundle.files.items():
                (host / name / rel).parent.mkdir(parents=True, exist_ok=True)
                (host / name / rel).write_bytes(data)
        yield {name: f"{BUNDLES}/{token}/{name}" if sandboxed else str(host / name) for name in bundles}
    finally:
        shutil.rmtree(host, ignore_errors=True)


_STAGE: list[Path] = []


def _stage_root() -> Path:
    with _LOCK:
        if not _STAGE:
            root = Path(tempfile.mkdtemp(prefix="hotfloat-bundles-"))
            root.chmod(0o311)
            _STAGE.append(root)
            atexit.register(_remove_stage, root)
        return _STAGE[0]


def _remove_stage(root: Path) -> None:
    root.chmod(0o700)
    shutil.rmtree(root, ignore_errors=True)
