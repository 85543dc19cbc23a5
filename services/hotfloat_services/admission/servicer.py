"""Admission RPC as an adapter: archive + build -> records, the admission checks on this worker's device, reply."""

from __future__ import annotations

from hotfloat.admission import admit
from hotfloat.bundle import Bundle
from hotfloat.compiler import BuildRecord
from hotfloat.validator import Admission
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle

from .._proto import admission_pb2, admission_pb2_grpc, common_pb2
from ..common.convert import bundle_from_proto
from ..common.streaming import Worker
from .convert import admit_result, build_from_proto, verify_options


def admit_bundle(bundle: Bundle, build: BuildRecord, options: VerifyOptions) -> Admission:
    """Verifies the ops, then admits the cubins (same seed) when the build made any."""
    report = verify_bundle(bundle, options)
    native = admit(bundle, build, seed=report.seed) if build.status is Status.PASS else None
    return Admission(verify=report, native=native)


class AdmissionServicer(admission_pb2_grpc.AdmissionServicer):
    def __init__(self, worker: Worker, config):
        self._worker = worker
        self._device = config.device
        self._options = {"device": config.device, "trials": config.verify_trials, "max_shapes": config.verify_max_shapes,
                         "dtypes": list(config.verify_dtypes) if config.verify_dtypes else None}

    def Admit(self, request, context):
        bundle = bundle_from_proto(request.bundle)
        build = build_from_proto(request.build)
        options = verify_options(self._options, request.seed if request.HasField("seed") else None)
        work = self._worker.run("admit", f"verifying {bundle.identity[:12]} on {self._device}",
                                lambda note: admit_bundle(bundle, build, options), context)
        for item in work:
            if isinstance(item, common_pb2.Progress):
                yield admission_pb2.AdmitEvent(progress=item)
            else:
                yield admission_pb2.AdmitEvent(result=admit_result(item, self._device))
