"""The compiler service over a Unix socket: scan verdicts, builds with progress, artifacts with digests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from hotfloat_services._proto import common_pb2, compiler_pb2, compiler_pb2_grpc
from hotfloat_services.common.auth import call_metadata
from hotfloat_services.common.transport import channel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BANNED = "import socket\n\ndef run(x, out):\n    out.copy_(x[:, : x.shape[1] // 2])\n"


@pytest.fixture
def compiler(services, token):
    with channel(services("compiler")["compiler"]) as ch:
        yield compiler_pb2_grpc.CompilerStub(ch), call_metadata(token)


def _bundle(archive_identity):
    archive, identity = archive_identity
    return {"identity": identity, "archive": archive}


def _build(stub, auth, bundle):
    events = list(stub.Build(compiler_pb2.BuildRequest(bundle=bundle), timeout=300, metadata=auth))
    assert events and all(e.HasField("progress") for e in events[:-1]) and events[-1].HasField("result")
    return events, events[-1].result


def test_scan_passes_a_clean_bundle(compiler, packed):
    stub, auth = compiler
    reply = stub.Scan(compiler_pb2.ScanRequest(bundle=_bundle(packed())), timeout=30, metadata=auth)
    assert reply.verdict.status == common_pb2.PASS
    assert json.loads(reply.verdict.evidence_json)["ops"][0]["findings"] == []


def test_scan_fails_a_banned_import_with_the_finding(compiler, packed, make_bundle):
    stub, auth = compiler
    reply = stub.Scan(compiler_pb2.ScanRequest(bundle=_bundle(packed(make_bundle(BANNED)))), timeout=30, metadata=auth)
    assert reply.verdict.status == common_pb2.FAIL
    assert any("kernels/k.py:1" in r and "socket" in r for r in reply.verdict.reasons)


def test_build_of_python_ops_has_nothing_to_build(compiler, packed):
    stub, auth = compiler
    events, result = _build(stub, auth, _bundle(packed()))
    assert events[0].progress.stage == "build"
    assert result.verdict.status == common_pb2.NOT_APPLICABLE and not result.artifacts
    assert "python ops load from source" in result.verdict.reasons[0]


def test_build_refuses_what_scan_refuses(compiler, packed, make_bundle):
    stub, auth = compiler
    _, result = _build(stub, auth, _bundle(packed(make_bundle(BANNED))))
    assert result.verdict.status == common_pb2.FAIL and result.verdict.reasons[0] == "scan refused the bundle"


def test_build_of_a_triton_aot_bundle_returns_digested_cubins(compiler, packed):
    stub, auth = compiler
    _, result = _build(stub, auth, _bundle(packed(EXAMPLES / "silu_triton_aot")))
    assert result.verdict.status == common_pb2.PASS, result.verdict.reasons
    record = json.loads(result.verdict.evidence_json)
    assert {a.name for a in result.artifacts} == {k["cubin"] for k in record["kernels"]}
    for a in result.artifacts:
        assert a.data[:4] == b"\x7fELF" and hashlib.sha256(a.data).hexdigest() == a.sha256
