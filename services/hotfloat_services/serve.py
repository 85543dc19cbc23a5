"""The service registry and the process entry point each container runs: one service per process."""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass

import grpc

from hotfloat.errors import InputError
from hotfloat.validator import StageConfig

from ._proto import admission_pb2_grpc, compiler_pb2_grpc, qualification_pb2_grpc
from .admission.servicer import AdmissionServicer
from .common.server import create_server
from .common.streaming import Worker
from .common.transport import Tls
from .compiler.servicer import CompilerServicer
from .qualification.servicer import QualificationServicer

SERVICES = {
    "compiler": ("Compiler", compiler_pb2_grpc.add_CompilerServicer_to_server, CompilerServicer),
    "admission": ("Admission", admission_pb2_grpc.add_AdmissionServicer_to_server, AdmissionServicer),
    "qualification": (
        "Qualification",
        qualification_pb2_grpc.add_QualificationServicer_to_server,
        QualificationServicer,
    ),
}


@dataclass
class Running:
    """A started service: its server, the address to dial and its work pool."""

    name: str
    server: grpc.Server
    target: str
    worker: Worker

    def stop(self, grace: float = 2.0) -> None:
        self.server.stop(grace).wait()
        self.worker.shutdown()


def start(
    name: str,
    where: str,
    *,
    token: str,
    config: StageConfig = StageConfig(),
    concurrency: int = 2,
    tls: Tls | None = None,
) -> Running:
    """Starts one registered service on `where` (socket path, unix:PATH or loopback HOST:PORT)."""
    if name not in SERVICES:
        raise InputError(f"unknown service {name!r} (choose from {', '.join(SERVICES)})")
    service, add, make = SERVICES[name]
    worker = Worker(concurrency)
    servicer = make(worker, config)
    server, target = create_server(
        service, lambda s: add(servicer, s), where, token=token, concurrency=concurrency, tls=tls
    )
    return Running(name, server, target, worker)


def serve_forever(running: Running, ready=print) -> None:
    """Blocks until SIGTERM or SIGINT, then drains in-flight calls briefly and stops."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    ready(running.target)
    stop.wait()
    running.stop()
