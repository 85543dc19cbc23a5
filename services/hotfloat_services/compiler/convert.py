"""Compiler wire <-> records: the scan and build outcomes become verdicts; cubins travel as digested artifacts."""

from __future__ import annotations

from hotfloat.compiler import BuildRecord
from hotfloat.scan import ScanReport
from hotfloat.validator import Outcome

from .._proto import compiler_pb2
from ..common.convert import artifact_to_proto, verdict_to_proto


def scan_reply(outcome: Outcome[ScanReport]) -> compiler_pb2.ScanReply:
    return compiler_pb2.ScanReply(verdict=verdict_to_proto(outcome.status, outcome.reasons, outcome.evidence))


def build_result(outcome: Outcome[BuildRecord]) -> compiler_pb2.BuildResult:
    return compiler_pb2.BuildResult(
        verdict=verdict_to_proto(outcome.status, outcome.reasons, outcome.evidence),
        artifacts=[artifact_to_proto(name, data) for name, data in sorted(outcome.artifacts.items())],
    )
