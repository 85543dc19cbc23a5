"""Where services listen and how callers connect: Unix sockets by default, TCP on loopback; any other host, and DNS
names (`dns:///NAME:PORT`, every address the name resolves to, balanced by gRPC's round_robin), only with mutual TLS."""

from __future__ import annotations

import ipaddress
import re
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
BALANCED = (("grpc.lb_policy_name", "round_robin"),)
"""A DNS target's calls spread over every address it resolves to (a headless Service's pods), by gRPC itself."""
HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)$")


@dataclass(frozen=True)
class Tls:
    """PEM material for mutual TLS on TCP: each side presents a certificate signed by the deployment's CA."""

    ca: bytes
    cert: bytes
    key: bytes

    @classmethod
    def load(cls, ca: str, cert: str, key: str) -> Tls:
        return cls(Path(ca).read_bytes(), Path(cert).read_bytes(), Path(key).read_bytes())


def address(where: str, tls: Tls | None = None) -> str:
    """Normalises `unix:PATH`, a plain socket path, `HOST:PORT` or `dns:///NAME:PORT` into a gRPC target; a host
    other than loopback (and any DNS target) needs mutual TLS: the token alone would cross the network in clear."""
    if where.startswith("unix:"):
        return where
    dns = where.startswith("dns:")
    hostport = where.removeprefix("dns:").removeprefix("///") if dns else where
    if not dns and ("/" in where or where.endswith(".sock")):
        return f"unix:{Path(where).absolute()}"
    host, _, port = hostport.rpartition(":")
    if not HOST.match(host) or not port.isdigit():
        raise InputError(f"{where!r}: expected a socket path, unix:PATH, HOST:PORT or dns:///NAME:PORT")
    try:
        loopback = not dns and (host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback)
    except ValueError:
        loopback = False
    if not loopback and tls is None:
        raise InputError(
            f"{where!r}: TCP beyond loopback needs mutual TLS (--tls-ca, --tls-cert, --tls-key); "
            "without it use loopback or a Unix socket"
        )
    return where


def channel(target: str, tls: Tls | None = None, options: tuple = ()) -> grpc.Channel:
    """A channel with the same message bounds as the servers, and `options` besides; a DNS target balances over all
    its addresses."""
    target = address(target, tls)
    options = CHANNEL_OPTIONS + tuple(options) + (BALANCED if target.startswith("dns:") else ())
    if tls is None:
        return grpc.insecure_channel(target, options=options)
    creds = grpc.ssl_channel_credentials(root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert)
    return grpc.secure_channel(target, creds, options=options)


def bind(server: grpc.Server, target: str, tls: Tls | None = None) -> str:
    """Binds a server and returns the address callers use (the real port when asked for port 0)."""
    target = address(target, tls)
    if target.startswith("dns:"):
        raise InputError(f"{target!r}: a server listens on an address (HOST:PORT), not a DNS target")
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
