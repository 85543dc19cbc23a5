"""Mutual TLS: a caller without a certificate from the deployment CA gets nothing; beyond loopback and through DNS
targets only mutual TLS is spoken."""

from __future__ import annotations

from concurrent import futures

import grpc
import pytest
import trustme

from hotfloat.errors import InputError

from hotfloat_services._proto import common_pb2, compiler_pb2, compiler_pb2_grpc
from hotfloat_services.common.auth import call_metadata
from hotfloat_services.common.transport import Tls, bind, channel
from hotfloat_services.serve import start


def _tls(ca: trustme.CA, name: str) -> Tls:
    cert = ca.issue_cert(name)
    return Tls(ca=ca.cert_pem.bytes(), cert=cert.cert_chain_pems[0].bytes(), key=cert.private_key_pem.bytes())


def test_mtls_requires_a_client_certificate_from_the_ca(token, packed):
    ca = trustme.CA()
    running = start("compiler", "127.0.0.1:0", token=token, tls=_tls(ca, "localhost"))
    archive, identity = packed()
    request = compiler_pb2.ScanRequest(bundle=common_pb2.BundleArchive(identity=identity, archive=archive))
    target = running.target.replace("127.0.0.1", "localhost")
    try:
        with channel(target, _tls(ca, "validator")) as ch:
            reply = compiler_pb2_grpc.CompilerStub(ch).Scan(request, timeout=30, metadata=call_metadata(token))
            assert reply.verdict.status == common_pb2.PASS
        foreign = _tls(trustme.CA(), "intruder")  # trusts the server, but its certificate is not from the deployment CA
        intruder = Tls(ca=ca.cert_pem.bytes(), cert=foreign.cert, key=foreign.key)
        with channel(target, intruder) as ch, pytest.raises(grpc.RpcError) as err:
            compiler_pb2_grpc.CompilerStub(ch).Scan(request, timeout=10, metadata=call_metadata(token))
        assert err.value.code() is grpc.StatusCode.UNAVAILABLE
        with grpc.insecure_channel(target) as ch, pytest.raises(grpc.RpcError):
            compiler_pb2_grpc.CompilerStub(ch).Scan(request, timeout=10, metadata=call_metadata(token))
    finally:
        running.stop(0)


def test_a_dns_target_reaches_the_server_over_mutual_tls_and_nothing_listens_beyond_loopback_in_clear(token, packed):
    """`dns:///NAME:PORT` (how the validator names a headless Service) resolves and balances through gRPC itself;
    the same target without TLS, and a server on a non-loopback address without TLS, are refused up front."""
    ca = trustme.CA()
    running = start("compiler", "127.0.0.1:0", token=token, tls=_tls(ca, "localhost"))
    archive, identity = packed()
    request = compiler_pb2.ScanRequest(bundle=common_pb2.BundleArchive(identity=identity, archive=archive))
    target = f"dns:///localhost:{running.target.rpartition(':')[2]}"
    try:
        with channel(target, _tls(ca, "validator")) as ch:
            reply = compiler_pb2_grpc.CompilerStub(ch).Scan(request, timeout=30, metadata=call_metadata(token))
            assert reply.verdict.status == common_pb2.PASS
        with pytest.raises(InputError, match="needs mutual TLS"):
            channel(target)
    finally:
        running.stop(0)
    server = grpc.server(futures.ThreadPoolExecutor(1))
    try:
        with pytest.raises(InputError, match="needs mutual TLS"):
            bind(server, "0.0.0.0:0")
        assert bind(server, "0.0.0.0:0", _tls(ca, "localhost")).startswith("0.0.0.0:")
    finally:
        server.stop(0)
