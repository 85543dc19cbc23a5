"""Compiler wire <-> records: scan reports and build records become verdicts; cubins travel as digested artifacts."""

from __future__ import annotations

from hotfloat.compiler import BuildRecord
from hotfloat.scan import ScanReport
from hotfloat.verdict import Status

from .._proto import compiler_pb2
from ..common.convert import artifact_to_proto, verdict_to_proto


def scan_reply(report: ScanReport) -> compiler_pb2.ScanReply:
    reasons = [f"{o.op}: {f}" for o in report.ops for f in o.findings]
    status = Status.PASS if report.clean else Status.FAIL
    return compiler_pb2.ScanReply(verdict=verdict_to_proto(status, reasons, report))


def build_result(record: BuildRecord) -> compiler_pb2.BuildResult:
    return compiler_pb2.BuildResult(
        verdict=verdict_to_proto(record.status, list(record.reasons), record),
        artifacts=[artifact_to_proto(name, data) for name, data in sorted(record.cubins.items())],
    )
