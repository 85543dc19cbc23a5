"""Compiler RPCs as adapters: request -> the `LocalStages` call -> reply."""

from __future__ import annotations

from hotfloat.validator import LocalStages, StageConfig

from .._proto import common_pb2, compiler_pb2, compiler_pb2_grpc
from ..common.streaming import Worker
from .convert import build_result, scan_reply


class CompilerServicer(compiler_pb2_grpc.CompilerServicer):
    def __init__(self, worker: Worker, config: StageConfig):
        self._worker, self._stages = worker, LocalStages(config)

    def Scan(self, request, context):
        return scan_reply(self._stages.scan(request.bundle.archive, request.bundle.identity, lambda stage, msg: None))

    def Build(self, request, context):
        def work(note):
            return self._stages.build(request.bundle.archive, request.bundle.identity, lambda stage, msg: note(msg))

        for item in self._worker.run("build", f"building {request.bundle.identity[:12]}", work, context):
            if isinstance(item, common_pb2.Progress):
                yield compiler_pb2.BuildEvent(progress=item)
            else:
                yield compiler_pb2.BuildEvent(result=build_result(item))
