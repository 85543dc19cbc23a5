"""Creating a service's server: bounded workers and messages, the guard interceptor, health, and a bound address."""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from .interceptor import Guard
from .transport import CHANNEL_OPTIONS, Tls, bind

QUEUE_FACTOR = 4
"""Calls accepted beyond the working threads wait in line; more are refused RESOURCE_EXHAUSTED."""


def create_server(
    name: str,
    register: Callable[[grpc.Server], None],
    where: str,
    *,
    token: str,
    concurrency: int = 2,
    tls: Tls | None = None,
) -> tuple[grpc.Server, str]:
    """Builds, binds and starts a server for one service; returns it and the address to dial (port 0 resolved)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=concurrency * QUEUE_FACTOR + 2, thread_name_prefix=f"hotfloat-{name}"),
        interceptors=(Guard(token),),
        options=CHANNEL_OPTIONS,
        maximum_concurrent_rpcs=concurrency * QUEUE_FACTOR,
    )
    register(server)
    checker = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    target = bind(server, where, tls)
    server.start()
    for service in ("", f"hotfloat.v1.{name}"):
        checker.set(service, health_pb2.HealthCheckResponse.SERVING)
    return server, target
