"""The validator's stages over gRPC (`hotfloat.validator.Stages`): one call per stage, each with its deadline, the
token, and progress relayed. gRPC failures become library errors here, so the pipeline never sees grpc."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import grpc

from hotfloat.compiler import BuildRecord
from hotfloat.errors import InfrastructureError
from hotfloat.scan import ScanReport
from hotfloat.validator import Admitted, OnProgress, Outcome, Qualified, StageRefused

from .._proto import admission_pb2_grpc, compiler_pb2_grpc, qualification_pb2_grpc
from ..common.auth import call_metadata
from ..common.transport import Tls, channel
from . import convert

REFUSALS = {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED}
"""Codes that refuse the validator itself (a deployment fault); any other failure is transient and retried."""


@dataclass(frozen=True)
class Deadlines:
    """Seconds each call may take end to end; a call past its deadline is retried, never judged."""

    scan: float = 60.0
    build: float = 600.0
    admit: float = 900.0
    qualify: float = 3600.0


def _translated(call):
    """A stage call whose gRPC failures arrive as StageRefused or InfrastructureError, never as grpc.RpcError."""

    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        try:
            return call(*args, **kwargs)
        except grpc.RpcError as e:
            if e.code() in REFUSALS:
                raise StageRefused(e.details() or "") from None
            raise InfrastructureError(f"{e.code().name}: {e.details()}") from None

    return wrapper


class StageClients:
    """Channels to the three services; `qualification` None means the run stops at admission."""

    def __init__(self, compiler: str, admission: str, qualification: str | None, *, token: str,
                 tls: Tls | None = None, deadlines: Deadlines = Deadlines()):
        self._meta = call_metadata(token)
        self._deadlines = deadlines
        self._channels = [channel(compiler, tls), channel(admission, tls)]
        self._compiler = compiler_pb2_grpc.CompilerStub(self._channels[0])
        self._admission = admission_pb2_grpc.AdmissionStub(self._channels[1])
        self._qualification = None
        if qualification:
            self._channels.append(channel(qualification, tls))
            self._qualification = qualification_pb2_grpc.QualificationStub(self._channels[2])

    def close(self) -> None:
        for c in self._channels:
            c.close()

    @_translated
    def scan(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[ScanReport]:
        reply = self._compiler.Scan(convert.scan_request(archive, identity), timeout=self._deadlines.scan, metadata=self._meta)
        return convert.outcome(reply.verdict, ScanReport)

    @_translated
    def build(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[BuildRecord]:
        stream = self._compiler.Build(convert.build_request(archive, identity), timeout=self._deadlines.build, metadata=self._meta)
        result = _final(stream, "build", on_progress)
        return convert.outcome(result.verdict, BuildRecord, result.artifacts)

    @_translated
    def admit(self, archive: bytes, identity: str, built: Outcome[BuildRecord],
              on_progress: OnProgress) -> Outcome[Admitted]:
        stream = self._admission.Admit(convert.admit_request(archive, identity, built), timeout=self._deadlines.admit,
                                       metadata=self._meta)
        result = _final(stream, "admit", on_progress)
        return convert.outcome(result.verdict, Admitted, extra={"device": result.device})

    @_translated
    def qualify(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[Qualified]:
        if self._qualification is None:
            raise InfrastructureError("no qualification service is configured")
        stream = self._qualification.Qualify(convert.qualify_request(archive, identity),
                                             timeout=self._deadlines.qualify, metadata=self._meta)
        result = _final(stream, "qualify", on_progress)
        return convert.outcome(result.verdict, Qualified, extra={"score": result.score})


def _final(stream, stage: str, on_progress: OnProgress):
    """Relays progress and returns the one result; a stream that ends without one is an infrastructure fault."""
    for event in stream:
        if event.HasField("progress"):
            on_progress(stage, event.progress.message)
        elif event.HasField("result"):
            return event.result
    raise InfrastructureError(f"{stage}: the service closed the stream without a result")
