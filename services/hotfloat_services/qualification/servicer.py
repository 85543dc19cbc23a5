"""Qualification RPC as an adapter: archive -> bundle, one complete-engine A/B, result -> reply."""

from __future__ import annotations

import threading

from hotfloat.qualify import QualifyOptions, qualify_bundle

from .._proto import common_pb2, qualification_pb2, qualification_pb2_grpc
from ..common.convert import bundle_from_proto
from ..common.streaming import Worker
from .convert import qualify_result


def _rule_given(rule) -> dict:
    """A configured rule as `for_device` takes it: only the fields it sets, over the device's defaults (a rule
    that names a few parameters must not reset the rest, such as CPU's switched-off carry-over bound, to the
    record's generic defaults)."""
    if rule is None:
        return {}
    fields = rule.model_dump(include=rule.model_fields_set)
    tol = fields.pop("logprob_tol", None)
    return {"rule": fields, **({"logprob_tol": tol} if tol is not None else {})}


class QualificationServicer(qualification_pb2_grpc.QualificationServicer):
    def __init__(self, worker: Worker, config):
        self._worker = worker
        self._options = QualifyOptions.for_device(config.device, warmup_passes=config.qualify_warmup_passes,
                                                  extra_passes=dict(config.qualify_extra_passes),
                                                  **_rule_given(config.qualify_rule))
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
