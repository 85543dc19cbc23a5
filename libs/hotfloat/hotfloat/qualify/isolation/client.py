"""The validator's handle on the GPU watchdog process (hotfloat.qualify.isolation.watchdog, which makes the driver calls):
started with only the environment it needs, spoken to over a socketpair, every reply under a deadline, so a hung
driver call costs the validator a timeout and a restart, never a hang of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from ...errors import InfrastructureError
from ...engine import wire
from .pids import ENV_HOST_PROC

REPLY_S = 10.0
"""Watchdog replies that take longer than this (plus the lock timeout) mean a hung driver call."""
CLOSE_S = 5.0
"""How long closing waits for the watchdog to exit: one stuck in a driver call cannot even die until the call
returns, and the validator must not hang with it."""


class Watchdog:
    """The validator's handle on the watchdog process (`argv`: the program, hotfloat.qualify.isolation.watchdog unless a
    test runs a stand-in for a GPU host); every reply has a deadline."""

    def __init__(self, argv: list[str] | None = None):
        self.argv = argv or [sys.executable, "-m", "hotfloat.qualify.isolation.watchdog"]
        self.conn, theirs = socket.socketpair()
        env = {
            k: v
            for k, v in os.environ.items()
            if k in ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "HOME", ENV_HOST_PROC)
        }
        self.proc = subprocess.Popen(
            self.argv, stdin=theirs, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        theirs.close()

    def ask(self, op: str, wait_s: float | None = None, **args) -> dict:
        try:
            wire.send(self.conn, {"op": op, **args})
            reply = wire.recv(self.conn, time.monotonic() + (wait_s or REPLY_S))
        except (OSError, wire.WireError) as e:
            raise TimeoutError(f"watchdog {op}: {e}") from None
        if reply.get("error"):
            raise InfrastructureError(f"watchdog {op}: {reply['error']}")
        return reply

    def close(self) -> None:
        """Ends the watchdog within CLOSE_S; one that cannot die yet is left to the kernel and named on stderr."""
        self.conn.close()
        self.proc.kill()
        try:
            self.proc.wait(timeout=CLOSE_S)
        except subprocess.TimeoutExpired:
            print(
                f"hotfloat: the GPU watchdog (pid {self.proc.pid}) did not exit within {CLOSE_S:.0f} s of being killed "
                "(a driver call it is stuck in must return first); left behind",
                file=sys.stderr,
            )
