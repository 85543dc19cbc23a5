"""Where services listen and how callers connect: Unix sockets by default, TCP only on loopback, mTLS optional."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc

from hotfloat.errors import InputError

MAX_MESSAGE_BYTES = 32 << 20
"""Largest request or reply: a 16 MiB bundle archive plus its built artifacts."""
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)


@dataclass(frozen=True)
class Tls:
    """PEM material for mutual TLS on TCP: each side presents a certificate signed by the deployment's CA."""

    ca: bytes
    cert: bytes
    key: bytes

    @classmethod
    def load(cls, ca: str, cert: str, key: str) -> Tls:
        return cls(Path(ca).read_bytes(), Path(cert).read_bytes(), Path(key).read_bytes())


def address(where: str) -> str:
    """Normalises `unix:PATH`, a plain socket path, or `HOST:PORT` on loopback into a gRPC target."""
    if where.startswith("unix:"):
        return where
    if "/" in where or where.endswith(".sock"):
        return f"unix:{Path(where).absolute()}"
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"{where!r}: expected a socket path, unix:PATH or HOST:PORT")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise InputError(f"{where!r}: TCP is served on loopback only (use a Unix socket across containers)")
    return where


def channel(target: str, tls: Tls | None = None) -> grpc.Channel:
    """A channel with the same message bounds as the servers."""
    target = address(target)
    if tls is None:
        return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
    creds = grpc.ssl_channel_credentials(root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert)
    return grpc.secure_channel(target, creds, options=CHANNEL_OPTIONS)


def bind(server: grpc.Server, target: str, tls: Tls | None = None) -> str:
    """Binds a server and returns the address callers use (the real port when asked for port 0)."""
    target = address(target)
    if target.startswith("unix:"):
        Path(target.removeprefix("unix:").removeprefix("//")).unlink(missing_ok=True)
    if tls is None:
        port = server.add_insecure_port(target)
    else:
        creds = grpc.ssl_server_credentials([(tls.key, tls.cert)], root_certificates=tls.ca, require_client_auth=True)
        port = server.add_secure_port(target, creds)
    if target.startswith("unix:"):
        return target
    return f"{target.rpartition(':')[0]}:{port}"
