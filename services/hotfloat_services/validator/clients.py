"""The validator's stages over gRPC (`hotfloat.validator.Stages`): one call per stage, each with its deadline, the
token, and progress relayed; admission and qualification may have several endpoints (`Endpoints`: one qualification
in flight per endpoint). gRPC failures become library errors here, so the pipeline never sees grpc."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from hotfloat.compiler import BuildRecord
from hotfloat.errors import InfrastructureError
from hotfloat.scan import ScanReport
from hotfloat.validator import Admitted, OnProgress, Outcome, Qualified, StageRefused
from hotfloat.validator.stages import OnStart

from .._proto import admission_pb2_grpc, compiler_pb2_grpc, qualification_pb2_grpc
from ..common.auth import call_metadata
from ..common.transport import Tls
from . import convert
from .endpoints import COOL_OFF_S, Endpoints, dial

REFUSALS = {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED}
"""Codes that refuse the validator itself (a deployment fault); any other failure is transient and retried."""


@dataclass(frozen=True)
class Deadlines:
    """Seconds each call may take end to end; a call past its deadline is retried, never judged."""

    scan: float = 60.0
    build: float = 600.0
    admit: float = 900.0
    qualify: float = 3600.0


@contextlib.contextmanager
def _translated(where: str = "", pool: Endpoints | None = None):
    """gRPC failures inside arrive as StageRefused or InfrastructureError (naming the endpoint), never as grpc.RpcError;
    an endpoint that failed in transport (UNAVAILABLE) is marked down in its pool, for every caller."""
    try:
        yield
    except grpc.RpcError as e:
        if e.code() in REFUSALS:
            raise StageRefused(e.details() or "") from None
        if pool is not None and e.code() is grpc.StatusCode.UNAVAILABLE:
            pool.mark_down(where, e.details() or "")
        suffix = f" (at {where})" if where else ""
        raise InfrastructureError(f"{e.code().name}: {e.details()}{suffix}") from None


def _many(targets: str | Sequence[str] | None) -> list[str]:
    return [targets] if isinstance(targets, str) else list(targets or ())


class StageClients:
    """Channels to the three services; no qualification endpoint means the run stops at admission."""

    def __init__(
        self,
        compiler: str,
        admission: str | Sequence[str],
        qualification: str | Sequence[str] | None,
        *,
        token: str,
        tls: Tls | None = None,
        deadlines: Deadlines = Deadlines(),
        cool_off_s: float = COOL_OFF_S,
    ):
        self._meta = call_metadata(token)
        self._deadlines = deadlines
        self._channel = dial(compiler, tls)
        self._compiler = compiler_pb2_grpc.CompilerStub(self._channel)
        self._admission = Endpoints(_many(admission), admission_pb2_grpc.AdmissionStub, tls=tls, cool_off_s=cool_off_s)
        self._qualification = None
        if _many(qualification):
            self._qualification = Endpoints(
                _many(qualification),
                qualification_pb2_grpc.QualificationStub,
                tls=tls,
                per_endpoint=1,
                cool_off_s=cool_off_s,
            )

    def abandon(self) -> None:
        """Calls waiting for an admission or qualification endpoint give up (the validator is stopping)."""
        for pool in (self._admission, self._qualification):
            if pool is not None:
                pool.abandon()

    def close(self) -> None:
        self._channel.close()
        for pool in (self._admission, self._qualification):
            if pool is not None:
                pool.close()

    def scan(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[ScanReport]:
        with _translated():
            reply = self._compiler.Scan(
                convert.scan_request(archive, identity), timeout=self._deadlines.scan, metadata=self._meta
            )
        return convert.outcome(reply.verdict, ScanReport)

    def build(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[BuildRecord]:
        with _translated():
            stream = self._compiler.Build(
                convert.build_request(archive, identity), timeout=self._deadlines.build, metadata=self._meta
            )
            result = _final(stream, "build", on_progress)
        return convert.outcome(result.verdict, BuildRecord, result.artifacts)

    def admit(
        self, archive: bytes, identity: str, built: Outcome[BuildRecord], on_progress: OnProgress, *, on_start: OnStart
    ) -> Outcome[Admitted]:
        with self._admission.lease(identity) as (where, stub), _translated(where, self._admission):
            on_start(where)
            stream = stub.Admit(
                convert.admit_request(archive, identity, built), timeout=self._deadlines.admit, metadata=self._meta
            )
            result = _final(stream, "admit", on_progress)
        return convert.outcome(result.verdict, Admitted, extra={"device": result.device})

    def qualify(
        self, archive: bytes, identity: str, on_progress: OnProgress, *, on_start: OnStart, avoid: str | None = None
    ) -> Outcome[Qualified]:
        """One qualification on a free, live endpoint other than `avoid` (the first run's, for the reproduction)
        when there is another; the reply's evidence names the endpoint that ran it."""
        if self._qualification is None:
            raise InfrastructureError("no qualification service is configured")
        with self._qualification.lease(identity, avoid) as (where, stub), _translated(where, self._qualification):
            on_start(where)
            stream = stub.Qualify(
                convert.qualify_request(archive, identity), timeout=self._deadlines.qualify, metadata=self._meta
            )
            result = _final(stream, "qualify", on_progress)
        return convert.qualified(result, where)


def _final(stream, stage: str, on_progress: OnProgress):
    """Relays progress and returns the one result; a stream that ends without one is an infrastructure fault."""
    for event in stream:
        if event.HasField("progress"):
            on_progress(stage, event.progress.message)
        elif event.HasField("result"):
            return event.result
    raise InfrastructureError(f"{stage}: the service closed the stream without a result")
