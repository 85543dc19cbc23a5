"""Length-prefixed JSON messages over a Unix socket between the validator and an engine process (never pickle)."""

from __future__ import annotations

import json
import socket
import struct
import time

MAX_MESSAGE = 4 << 20


class WireError(Exception):
    """The peer closed, stalled past the deadline, or sent something that is not a bounded JSON object."""


def send(sock: socket.socket, msg: dict) -> None:
    data = json.dumps(msg).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock: socket.socket, deadline: float | None = None) -> dict:
    """One message; `deadline` is a time.monotonic() value after which the wait fails."""
    (n,) = struct.unpack(">I", _exact(sock, 4, deadline))
    if n > MAX_MESSAGE:
        raise WireError(f"message of {n} bytes exceeds the {MAX_MESSAGE}-byte limit")
    try:
        msg = json.loads(_exact(sock, n, deadline))
    except (ValueError, RecursionError) as e:  # ValueError also covers integers past the interpreter's digit limit
        raise WireError(f"message is not JSON: {e}") from None
    if not isinstance(msg, dict):
        raise WireError("message is not a JSON object")
    return msg


def _exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireError("no message before the deadline")
            sock.settimeout(left)
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except TimeoutError:
            raise WireError("no message before the deadline") from None
        except OSError as e:  # e.g. ECONNRESET: the engine died with unread input
            raise WireError(f"the engine process's connection failed: {e.strerror or e}") from None
        if not chunk:
            raise WireError("the engine process closed the connection")
        buf += chunk
    return bytes(buf)
