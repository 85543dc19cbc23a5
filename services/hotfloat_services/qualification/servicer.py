"""Qualification RPC as an adapter: request -> the `LocalStages` call (one complete-engine A/B at a time) -> reply."""

from __future__ import annotations

from hotfloat.validator import LocalStages, StageConfig

from .._proto import common_pb2, qualification_pb2, qualification_pb2_grpc
from ..common.streaming import Worker
from .convert import qualify_result


class QualificationServicer(qualification_pb2_grpc.QualificationServicer):
    def __init__(self, worker: Worker, config: StageConfig):
        self._worker, self._stages = worker, LocalStages(config)

    def Qualify(self, request, context):
        def work(note):
            return self._stages.qualify(request.bundle.archive, request.bundle.identity, lambda stage, msg: note(msg))

        message = f"qualifying {request.bundle.identity[:12]} on {self._stages.config.device}"
        for item in self._worker.run("qualify", message, work, context):
            if isinstance(item, common_pb2.Progress):
                yield qualification_pb2.QualifyEvent(progress=item)
            else:
                yield qualification_pb2.QualifyEvent(result=qualify_result(item))
