"""Every hotfloat RPC needs the token and a deadline; hostile requests get a clear status and the server keeps serving."""

from __future__ import annotations

import grpc
import pytest

from hotfloat_services._proto import compiler_pb2, compiler_pb2_grpc
from hotfloat_services.common.auth import call_metadata
from hotfloat_services.common.process import healthy
from hotfloat_services.common.transport import MAX_MESSAGE_BYTES, channel


@pytest.fixture
def compiler(services, packed, token):
    target = services("compiler")["compiler"]
    with channel(target) as ch:
        stub = compiler_pb2_grpc.CompilerStub(ch)
        archive, identity = packed()
        auth = call_metadata(token)
        good = compiler_pb2.ScanRequest(bundle={"identity": identity, "archive": archive})

        def still_serving():
            reply = stub.Scan(good, timeout=30, metadata=auth)
            assert reply.verdict.status == 1 and healthy(target)

        yield stub, ch, good, still_serving, auth


def _code(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as err:
        call()
    return err.value.code(), err.value.details()


def test_token_is_required(compiler):
    stub, _, good, still_serving, auth = compiler
    assert _code(lambda: stub.Scan(good, timeout=10))[0] is grpc.StatusCode.UNAUTHENTICATED
    wrong = call_metadata("x" * 30)
    assert _code(lambda: stub.Scan(good, timeout=10, metadata=wrong))[0] is grpc.StatusCode.UNAUTHENTICATED
    stream = stub.Build(compiler_pb2.BuildRequest(bundle=good.bundle), timeout=10)
    assert _code(lambda: list(stream))[0] is grpc.StatusCode.UNAUTHENTICATED
    still_serving()


def test_deadline_is_required(compiler):
    stub, _, good, still_serving, auth = compiler
    code, details = _code(lambda: stub.Scan(good, metadata=auth))
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "deadline" in details
    still_serving()


def test_oversize_request_is_refused(compiler):
    stub, _, good, still_serving, auth = compiler
    huge = compiler_pb2.ScanRequest(
        bundle={"identity": good.bundle.identity, "archive": b"\0" * (MAX_MESSAGE_BYTES + 1)}
    )
    assert _code(lambda: stub.Scan(huge, timeout=30, metadata=auth))[0] is grpc.StatusCode.RESOURCE_EXHAUSTED
    still_serving()


@pytest.mark.parametrize(
    "archive, why",
    [
        (b"not an archive", "not a valid bundle archive"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 64, "not a valid bundle archive"),
        (b"\0" * (17 << 20), "over the"),
    ],
)
def test_malformed_archives_are_invalid_argument(compiler, archive, why):
    stub, _, good, still_serving, auth = compiler
    bad = compiler_pb2.ScanRequest(bundle={"identity": good.bundle.identity, "archive": archive})
    code, details = _code(lambda: stub.Scan(bad, timeout=30, metadata=auth))
    assert code is grpc.StatusCode.INVALID_ARGUMENT and why in details
    still_serving()


def test_identity_mismatch_is_refused(compiler):
    stub, _, good, still_serving, auth = compiler
    lying = compiler_pb2.ScanRequest(bundle={"identity": "0" * 64, "archive": good.bundle.archive})
    code, details = _code(lambda: stub.Scan(lying, timeout=30, metadata=auth))
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "identity mismatch" in details
    still_serving()


def test_undecodable_message_is_refused(compiler):
    _, ch, _, still_serving, auth = compiler
    raw = ch.unary_unary("/hotfloat.v1.Compiler/Scan", request_serializer=None, response_deserializer=None)
    code, _ = _code(lambda: raw(b"\xff\xff\xff\xff garbage", timeout=10, metadata=auth))
    assert code is not grpc.StatusCode.OK
    still_serving()


def test_health_is_open_without_token(compiler, services):
    target = services()["compiler"]
    assert healthy(target)
