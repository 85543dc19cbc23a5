"""Services as separate processes (the validator's --spawn, the tests): start, wait until healthy, stop or kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hotfloat.errors import InfrastructureError

from .transport import Tls, channel

_ENTRY = "from hotfloat.cli.main import main; main()"


def healthy(target: str, tls: Tls | None = None, timeout: float = 2.0) -> bool:
    """True when the server at target answers its health check with SERVING."""
    with channel(target, tls) as ch:
        try:
            reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
        except grpc.RpcError:
            return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


class ServiceProcess:
    """`hotfloat serve NAME --socket PATH` in its own process group, so a kill takes its sandboxed children too."""

    def __init__(
        self,
        name: str,
        socket: Path,
        token_file: Path,
        *,
        device: str = "cpu",
        concurrency: int = 2,
        extra: tuple[str, ...] = (),
        log: Path | None = None,
    ):
        self.name, self.socket, self.target = name, Path(socket), f"unix:{Path(socket).absolute()}"
        self._args = [
            sys.executable,
            "-c",
            _ENTRY,
            "serve",
            name,
            "--socket",
            str(socket),
            "--token-file",
            str(token_file),
            "--device",
            device,
            "--concurrency",
            str(concurrency),
            *extra,
        ]
        self._log = log
        self.proc: subprocess.Popen | None = None

    def start(self, ready_timeout: float = 120.0) -> ServiceProcess:
        return self.launch().wait_ready(ready_timeout)

    def launch(self) -> ServiceProcess:
        """Starts the process without waiting, so several services can start in parallel."""
        self.socket.unlink(missing_ok=True)
        with open(self._log or os.devnull, "ab") as out:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                self._args, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True
            )
        return self

    def wait_ready(self, ready_timeout: float = 120.0) -> ServiceProcess:
        """Waits until the service answers its health check; a process that dies or stays silent is an error."""
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise InfrastructureError(f"service {self.name} exited with {self.proc.returncode} while starting")
            if self.socket.exists() and healthy(self.target):
                return self
            time.sleep(0.2)
        self.kill()
        raise InfrastructureError(f"service {self.name} did not become healthy within {ready_timeout:.0f} s")

    def kill(self) -> None:
        """SIGKILL to the whole group: the crash a worker suffers when its host dies."""
        self._signal(signal.SIGKILL)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it does not exit in time."""
        self._signal(signal.SIGTERM)
        try:
            if self.proc:
                self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def _signal(self, sig: int) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            if sig == signal.SIGKILL:
                self.proc.wait()

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
