"""The control channel between an engine's host process (the qualification worker or the live tier's runner, which
never imports candidate code) and the SGLang scheduler processes that arm the bundle.

The host listens on an abstract Unix socket with a random name (in the sandbox's own network namespace, so nothing
outside the sandbox reaches it) and exports the name in HOTFLOAT_CONTROL before it boots SGLang. The plugin in each
scheduler connects, says hello, and receives its settings (the audit's secret key among them) before it imports any
candidate code, then serves the host's requests on that connection in a thread: enable the twin's slots, report the
seam counts, hand over the round's audit. Candidate code has no file, socket or descriptor primitive (the scan's
allow-list), and a socket cannot be reopened through /proc, so it can neither issue, pre-empt nor answer a request;
no file is written for trusted code to read back.

Frames: a 4-byte length and a JSON object, then an 8-byte length and raw bytes (the audit's sealed words).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import struct
import threading
import time

ENV_CONTROL = "HOTFLOAT_CONTROL"
"""The abstract socket's name: set by the host, read by the plugin."""
ENV_OWNER = "HOTFLOAT_CONTROL_OWNER"
"""The host's pid: the plugin neither arms nor hooks anything there."""
MAX_HEADER = 16 << 20
MAX_DATA = 1 << 30


class ControlError(Exception):
    """The peer closed, stalled, or sent what is not the protocol."""


def send(sock: socket.socket, header: dict, data: bytes = b"") -> None:
    head = json.dumps(header).encode()
    sock.sendall(struct.pack(">I", len(head)) + head + struct.pack(">Q", len(data)) + data)


def recv(sock: socket.socket, deadline: float | None = None) -> tuple[dict, bytes]:
    (n,) = struct.unpack(">I", _exact(sock, 4, deadline))
    if n > MAX_HEADER:
        raise ControlError(f"a control header of {n} bytes passes the {MAX_HEADER}-byte bound")
    try:
        header = json.loads(_exact(sock, n, deadline))
    except ValueError as e:
        raise ControlError(f"a control header is not JSON: {str(e)[:100]}") from None
    (m,) = struct.unpack(">Q", _exact(sock, 8, deadline))
    if m > MAX_DATA:
        raise ControlError(f"control data of {m} bytes passes the {MAX_DATA}-byte bound")
    if not isinstance(header, dict):
        raise ControlError("a control header is not a JSON object")
    return header, _exact(sock, m, deadline)


def _exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    out = bytearray()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlError("the peer did not answer in time")
            sock.settimeout(left)
        try:
            chunk = sock.recv(min(n - len(out), 1 << 20))
        except TimeoutError:
            raise ControlError("the peer did not answer in time") from None
        except OSError as e:
            raise ControlError(f"the control socket failed: {e}") from None
        if not chunk:
            raise ControlError("the peer closed the control channel")
        out += chunk
    return bytes(out)


class ControlServer:
    """The host's end: listens before SGLang boots, hands each scheduler its settings, then asks and collects."""

    def __init__(self, settings: dict):
        self.name = f"hotfloat-{secrets.token_hex(16)}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind("\0" + self.name)
        self.listener.listen(8)
        self.settings = settings
        self.peers: list[tuple[int, socket.socket]] = []
        self._lock = threading.Lock()
        os.environ[ENV_CONTROL], os.environ[ENV_OWNER] = self.name, str(os.getpid())
        threading.Thread(target=self._accept, name="hotfloat-control", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
                hello, _ = recv(conn, time.monotonic() + 30)
                send(conn, self.settings)
            except (OSError, ControlError):
                return
            with self._lock:
                self.peers.append((int(hello.get("pid", 0)), conn))

    def wait(self, count: int, timeout_s: float) -> None:
        """Until `count` schedulers said hello; raises when fewer did (the plugin did not load in the engine)."""
        deadline = time.monotonic() + timeout_s
        while len(self.peers) < count:
            if time.monotonic() > deadline:
                raise ControlError(f"{len(self.peers)} of {count} SGLang schedulers opened the control channel")
            time.sleep(0.01)

    def ask(self, request: dict, timeout_s: float) -> list[tuple[dict, bytes]]:
        """One request to every scheduler; each one's reply, or ControlError with the first one's error."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            peers = list(self.peers)
        for _, conn in peers:
            send(conn, request)
        replies = [recv(conn, deadline) for _, conn in peers]
        errors = [f"pid {pid}: {h['error']}" for (pid, _), (h, _) in zip(peers, replies, strict=True) if h.get("error")]
        if errors:
            raise ControlError(f"the plugin failed {request.get('op')!r}: {'; '.join(errors)}"[:1000])
        return replies

    def close(self) -> None:
        for _, conn in self.peers:
            conn.close()
        self.listener.close()
        if os.environ.get(ENV_CONTROL) == self.name:
            del os.environ[ENV_CONTROL], os.environ[ENV_OWNER]


def connect(name: str, hello: dict, timeout_s: float = 60.0) -> tuple[socket.socket, dict]:
    """The scheduler's end: connects, says hello, returns the socket and the settings."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    sock.connect("\0" + name)
    send(sock, hello)
    settings, _ = recv(sock, time.monotonic() + timeout_s)
    sock.settimeout(None)
    return sock, settings


def serve(sock: socket.socket, handle) -> None:
    """Answers the host's requests until it closes: `handle(request) -> (reply, data)`; an exception becomes the
    reply's `error`, never a dead thread."""
    while True:
        try:
            request, _ = recv(sock)
        except ControlError:
            return
        try:
            reply, data = handle(request)
        except Exception as e:  # reported to the host, which fails the engine with it
            reply, data = {"error": f"{type(e).__name__}: {e}"[:500]}, b""
        send(sock, reply, data)
