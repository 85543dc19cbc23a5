"""Length-prefixed JSON messages over a Unix socket between the validator and an engine process (never pickle)."""

from __future__ import annotations

import json
import socket
import struct
import time

MAX_MESSAGE = 4 << 20


class WireError(Exception):
    """The peer closed (`died`), stalled past the deadline (`stalled`), or sent something that is not a bounded JSON
    object (`protocol`)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def send(sock: socket.socket, msg: dict) -> None:
    data = json.dumps(msg).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock: socket.socket, deadline: float | None = None) -> dict:
    """One message; `deadline` is a time.monotonic() value after which the wait fails."""
    (n,) = struct.unpack(">I", _exact(sock, 4, deadline))
    if n > MAX_MESSAGE:
        raise WireError(f"message of {n} bytes exceeds the {MAX_MESSAGE}-byte limit", "protocol")
    try:
        msg = json.loads(_exact(sock, n, deadline), parse_int=_int)
    except (ValueError, RecursionError) as e:
        raise WireError(f"message is not bounded JSON: {str(e)[:200]}", "protocol") from None
    if not isinstance(msg, dict):
        raise WireError("message is not a JSON object", "protocol")
    return msg


def _int(digits: str) -> int:
    """JSON integers of at most 18 digits: no field needs more, and a huge one would overflow floats downstream."""
    if len(digits.lstrip("-")) > 18:
        raise ValueError(f"integer of {len(digits)} digits")
    return int(digits)


def _exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireError("no message before the deadline", "stalled")
            sock.settimeout(left)
        try:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
        except TimeoutError:
            raise WireError("no message before the deadline", "stalled") from None
        except OSError as e:  # e.g. ECONNRESET: the engine died with unread input
            raise WireError(f"the engine process's connection failed: {e.strerror or e}", "died") from None
        if not chunk:
            raise WireError("the engine process closed the connection", "died")
        buf += chunk
    return bytes(buf)
