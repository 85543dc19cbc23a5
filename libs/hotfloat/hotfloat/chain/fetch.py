"""Bounded HTTPS fetch of a committed bundle archive: every origin is hostile.

Bounds: https only (also after redirects), at most `max_redirects` hops, one total deadline over connect, TLS
handshake, headers and body (every socket read waits at most the time left, so a server dribbling bytes,
slowloris-style, cannot hold a validator), a streaming size cap (Content-Length is checked first but never trusted), no content encodings, and by
default no private, loopback or link-local destinations (the resolved address is the one connected to, so DNS
cannot rebind between check and use). The archive itself is then bounded and validated by `hotfloat.bundle.unpack`.
"""

from __future__ import annotations

import http.client
import ipaddress
import select
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from ..bundle import Bundle, unpack
from ..bundle.archive import MAX_ARCHIVE_BYTES
from ..errors import BundleError
from .payload import check_url

CHUNK = 64 << 10


@dataclass(frozen=True)
class FetchPolicy:
    """The hard bounds of one fetch; tests shrink them, validators keep the defaults."""

    max_bytes: int = MAX_ARCHIVE_BYTES
    deadline_s: float = 30.0
    max_redirects: int = 3
    allow_private: bool = False
    cafile: str | None = None


class FetchRefused(Exception):
    """The origin or its response broke a bound; `transient` marks failures worth one more try later."""

    def __init__(self, reason: str, transient: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


def fetch_body(url: str, policy: FetchPolicy = FetchPolicy()) -> bytes:
    """The body at url (an archive, a feed), or FetchRefused with the reason."""
    end = time.monotonic() + policy.deadline_s
    for _ in range(policy.max_redirects + 1):
        try:
            check_url(url)
        except ValueError as e:
            raise FetchRefused(f"refused url {url!r}: {e}") from None
        status, location, body = _get(url, policy, end)
        if status in (301, 302, 303, 307, 308):
            if not location:
                raise FetchRefused(f"redirect {status} without a Location")
            url = urljoin(url, location)
            continue
        return body
    raise FetchRefused(f"more than {policy.max_redirects} redirects")


def fetch_bundle(url: str, identity: str, policy: FetchPolicy = FetchPolicy()) -> tuple[bytes, Bundle]:
    """Fetches, unpacks under the archive bounds and checks the recomputed identity against the committed one."""
    data = fetch_body(url, policy)
    try:
        bundle = unpack(data)
    except BundleError as e:
        raise FetchRefused(f"bad archive: {e}") from None
    if bundle.identity != identity:
        raise FetchRefused(f"identity mismatch: committed {identity[:16]}..., archive is {bundle.identity[:16]}...")
    return data, bundle


class _DeadlineSocket(ssl.SSLSocket):
    """A TLS socket whose every read is bounded by what is left of one absolute deadline, so dribbled headers or
    bodies (slowloris) cannot stretch a fetch: each read waits at most the remaining time, and none starts after it."""

    deadline = float("inf")

    def recv_into(self, buffer, nbytes=0, flags=0):
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline exceeded")
        self.settimeout(remaining)
        return super().recv_into(buffer, nbytes, flags)


def _get(url: str, policy: FetchPolicy, end: float) -> tuple[int, str | None, bytes]:
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    family, address = _resolve(host, port, policy)
    conn = http.client.HTTPSConnection(host, port, timeout=policy.deadline_s)
    try:
        conn.sock = _open(host, family, address, policy, end)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("GET", target, headers={"Accept-Encoding": "identity", "User-Agent": "hotfloat-validator"})
        resp = conn.getresponse()
        if resp.status in (301, 302, 303, 307, 308):
            return resp.status, resp.getheader("Location"), b""
        if resp.status != 200:
            raise FetchRefused(f"HTTP {resp.status} from {host}", transient=resp.status >= 500 or resp.status == 429)
        if resp.getheader("Content-Encoding", "identity").lower() != "identity":
            raise FetchRefused("content encodings are refused (the archive is already compressed)")
        declared = resp.getheader("Content-Length")
        if declared is not None and (not declared.isdigit() or int(declared) > policy.max_bytes):
            raise FetchRefused(f"declared size {declared} exceeds the {policy.max_bytes}-byte cap")
        body = bytearray()
        while chunk := resp.read1(CHUNK):
            body += chunk
            if len(body) > policy.max_bytes:
                raise FetchRefused(f"body exceeds the {policy.max_bytes}-byte cap")
        return 200, None, bytes(body)
    except FetchRefused:
        raise
    except ssl.SSLCertVerificationError as e:
        raise FetchRefused(f"TLS verification failed for {host}: {e.verify_message}") from None
    except (OSError, http.client.HTTPException, ValueError) as e:
        if time.monotonic() >= end:
            raise FetchRefused(f"deadline of {policy.deadline_s:g}s exceeded", transient=True) from None
        raise FetchRefused(f"fetch from {host} failed: {type(e).__name__}: {e}", transient=True) from None
    finally:
        conn.close()


def _open(host: str, family: int, address: tuple, policy: FetchPolicy, end: float) -> _DeadlineSocket:
    """Connects and completes the TLS handshake without blocking past the deadline (non-blocking handshake loop)."""
    raw = socket.socket(family, socket.SOCK_STREAM)
    try:
        raw.settimeout(max(0.01, end - time.monotonic()))
        raw.connect(address)
        context = ssl.create_default_context(cafile=policy.cafile)
        context.sslsocket_class = _DeadlineSocket
        tls = context.wrap_socket(raw, server_hostname=host, do_handshake_on_connect=False)
    except BaseException:
        raw.close()
        raise
    tls.deadline = end
    tls.setblocking(False)
    try:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                ready = select.select([tls], [], [], max(0.0, end - time.monotonic()))[0]
            except ssl.SSLWantWriteError:
                ready = select.select([], [tls], [], max(0.0, end - time.monotonic()))[1]
            if not ready:
                raise TimeoutError("deadline exceeded during the TLS handshake")
    except BaseException:
        tls.close()
        raise
    tls.settimeout(max(0.01, end - time.monotonic()))
    return tls


def _resolve(host: str, port: int, policy: FetchPolicy) -> tuple[int, tuple]:
    """The address to connect to; non-public destinations are refused unless the policy allows them."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as e:
        raise FetchRefused(f"cannot resolve {host}: {e}", transient=True) from None
    ip = ipaddress.ip_address(address[0])
    if not policy.allow_private and not ip.is_global:
        raise FetchRefused(f"{host} resolves to non-public address {ip} (refused)")
    return family, address
