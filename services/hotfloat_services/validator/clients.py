"""The validator's side of the wire: one call per stage, each with its deadline, the token, and progress relayed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hotfloat.errors import InfrastructureError

from .._proto import admission_pb2_grpc, compiler_pb2, compiler_pb2_grpc, qualification_pb2_grpc
from ..common.auth import call_metadata
from ..common.transport import Tls, channel
from . import convert
from .convert import Outcome

OnProgress = Callable[[str, str], None]
"""Called with (stage, message) for each progress event a service streams."""


@dataclass(frozen=True)
class Deadlines:
    """Seconds each call may take end to end; a call past its deadline is retried, never judged."""

    scan: float = 60.0
    build: float = 600.0
    admit: float = 900.0
    qualify: float = 3600.0


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

    def scan(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome:
        reply = self._compiler.Scan(convert.scan_request(archive, identity), timeout=self._deadlines.scan, metadata=self._meta)
        return convert.outcome(reply.verdict)

    def build(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome:
        stream = self._compiler.Build(convert.build_request(archive, identity), timeout=self._deadlines.build, metadata=self._meta)
        result = _final(stream, "build", on_progress)
        return convert.outcome(result.verdict, result.artifacts)

    def admit(self, archive: bytes, identity: str, build: compiler_pb2.BuildResult, on_progress: OnProgress) -> Outcome:
        stream = self._admission.Admit(convert.admit_request(archive, identity, build), timeout=self._deadlines.admit,
                                       metadata=self._meta)
        result = _final(stream, "admit", on_progress)
        return convert.outcome(result.verdict, extra={"device": result.device})

    def qualify(self, archive: bytes, identity: str, build: compiler_pb2.BuildResult, on_progress: OnProgress) -> Outcome:
        if self._qualification is None:
            raise InfrastructureError("no qualification service is configured")
        stream = self._qualification.Qualify(convert.qualify_request(archive, identity, build),
                                             timeout=self._deadlines.qualify, metadata=self._meta)
        result = _final(stream, "qualify", on_progress)
        return convert.outcome(result.verdict, extra={"score": result.score})


def _final(stream, stage: str, on_progress: OnProgress):
    """Relays progress and returns the one result; a stream that ends without one is an infrastructure fault."""
    for event in stream:
        if event.HasField("progress"):
            on_progress(stage, event.progress.message)
        elif event.HasField("result"):
            return event.result
    raise InfrastructureError(f"{stage}: the service closed the stream without a result")
