"""Qualification RPC as an adapter: archive -> bundle, one complete-engine A/B, result -> reply."""

from __future__ import annotations

import threading

from hotfloat.qualify import QualifyOptions, qualify_bundle
from hotfloat.qualify.api import rule_given

from .._proto import common_pb2, qualification_pb2, qualification_pb2_grpc
from ..common.convert import bundle_from_proto
from ..common.streaming import Worker
from .convert import qualify_result


class QualificationServicer(qualification_pb2_grpc.QualificationServicer):
    def __init__(self, worker: Worker, config):
        self._worker = worker
        self._options = QualifyOptions.for_device(config.device, warmup_passes=config.qualify_warmup_passes,
                                                  extra_passes=dict(config.qualify_extra_passes),
                                                  **(rule_given(config.qualify_rule) if config.qualify_rule else {}))
        self._timing = threading.Lock()
        """One A/B at a time: two qualifications sharing the host would time each other, not their bundles."""

    def Qualify(self, request, context):
        bundle = bundle_from_proto(request.bundle)

        def work(note):
            note("waiting for the host: another qualification is timing")
            with self._timing:
                note("starting")  # a caller that left while this run waited is not timed at all
                return qualify_bundle(bundle, self._options, progress=lambda what, done, most: note(f"{what} ({done}/{most})"))

        for item in self._worker.run("qualify", f"qualifying {bundle.identity[:12]} on {self._options.device}", work, context):
            if isinstance(item, common_pb2.Progress):
                yield qualification_pb2.QualifyEvent(progress=item)
            else:
                yield qualification_pb2.QualifyEvent(result=qualify_result(item, self._options.extra_passes))
