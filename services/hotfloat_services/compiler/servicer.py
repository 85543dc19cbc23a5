"""Compiler RPCs as adapters: archive -> bundle, one library stage, record -> reply."""

from __future__ import annotations

from hotfloat.bundle import Bundle
from hotfloat.compiler import BuildRecord, build_bundle
from hotfloat.scan import scan_bundle
from hotfloat.verdict import Status

from .._proto import common_pb2, compiler_pb2, compiler_pb2_grpc
from ..common.convert import bundle_from_proto
from ..common.streaming import Worker
from .convert import build_result, scan_reply


def compile_bundle(bundle: Bundle) -> BuildRecord:
    """Scans again (a build never compiles code the policy refuses), then builds deviceless."""
    report = scan_bundle(bundle)
    if not report.clean:
        reasons = [f"{o.op}: {f}" for o in report.ops for f in o.findings]
        return BuildRecord(bundle_identity=bundle.identity, arch="none", toolchain={}, status=Status.FAIL,
                           reasons=["scan refused the bundle", *reasons])
    return build_bundle(bundle)


class CompilerServicer(compiler_pb2_grpc.CompilerServicer):
    def __init__(self, worker: Worker):
        self._worker = worker

    def Scan(self, request, context):
        return scan_reply(scan_bundle(bundle_from_proto(request.bundle)))

    def Build(self, request, context):
        bundle = bundle_from_proto(request.bundle)
        for item in self._worker.run("build", f"building {bundle.identity[:12]}", lambda note: compile_bundle(bundle), context):
            if isinstance(item, common_pb2.Progress):
                yield compiler_pb2.BuildEvent(progress=item)
            else:
                yield compiler_pb2.BuildEvent(result=build_result(item))

