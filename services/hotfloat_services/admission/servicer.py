"""Admission RPC as an adapter: request -> the admission stage's library call on this worker's device -> reply."""

from __future__ import annotations

from hotfloat.validator import StageConfig
from hotfloat.validator.local import admit_stage

from .._proto import admission_pb2, admission_pb2_grpc, common_pb2
from ..common.convert import bundle_from_proto
from ..common.streaming import Worker
from .convert import admit_result, build_from_proto


class AdmissionServicer(admission_pb2_grpc.AdmissionServicer):
    def __init__(self, worker: Worker, config: StageConfig):
        self._worker, self._config = worker, config

    def Admit(self, request, context):
        bundle = bundle_from_proto(request.bundle)  # the archive is judged before the build that claims to be its
        built = build_from_proto(request.build)
        options = self._config.verify_options(request.seed if request.HasField("seed") else None)
        work = self._worker.run(
            "admit",
            f"verifying {bundle.identity[:12]} on {self._config.device}",
            lambda note: admit_stage(bundle, built, options),
            context,
        )
        for item in work:
            if isinstance(item, common_pb2.Progress):
                yield admission_pb2.AdmitEvent(progress=item)
            else:
                yield admission_pb2.AdmitEvent(result=admit_result(item))
