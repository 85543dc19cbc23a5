"""The admission worker over a Unix socket: verify verdicts with evidence, and refusal of tampered builds."""

from __future__ import annotations

import json

import grpc
import pytest

from hotfloat_services._proto import admission_pb2, admission_pb2_grpc, common_pb2, compiler_pb2, compiler_pb2_grpc
from hotfloat_services.common.auth import call_metadata
from hotfloat_services.common.transport import channel

GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""


@pytest.fixture
def stubs(services, token):
    targets = services("compiler", "admission")
    with channel(targets["compiler"]) as c, channel(targets["admission"]) as a:
        yield compiler_pb2_grpc.CompilerStub(c), admission_pb2_grpc.AdmissionStub(a), call_metadata(token)


def _admit(stubs, archive_identity, seed=None, tamper=None):
    compiler, admission, auth = stubs
    archive, identity = archive_identity
    bundle = common_pb2.BundleArchive(identity=identity, archive=archive)
    build = list(compiler.Build(compiler_pb2.BuildRequest(bundle=bundle), timeout=120, metadata=auth))[-1].result
    if tamper:
        tamper(build)
    request = admission_pb2.AdmitRequest(bundle=bundle, build=build, seed=seed)
    events = list(admission.Admit(request, timeout=300, metadata=auth))
    assert events[0].HasField("progress") and events[-1].HasField("result")
    return events[-1].result


def test_a_correct_kernel_passes_with_its_report(stubs, packed, make_bundle):
    result = _admit(stubs, packed(make_bundle(GOOD)), seed=1234)
    report = json.loads(result.verdict.evidence_json)["verify"]
    assert result.verdict.status == common_pb2.PASS, result.verdict.reasons
    assert result.device == "cpu" and report["seed"] == 1234 and report["rows"]


def test_a_build_record_that_lies_is_refused(stubs, packed):
    def tamper(build):
        record = json.loads(build.verdict.evidence_json)
        record["status"] = "PASS"
        build.verdict.evidence_json = json.dumps(record)
        build.verdict.status = common_pb2.PASS

    with pytest.raises(grpc.RpcError) as err:
        _admit(stubs, packed(), tamper=tamper)
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "build record" in err.value.details()


def test_an_artifact_that_does_not_match_its_digest_is_refused(stubs, packed):
    def tamper(build):
        build.artifacts.add(name="k.cubin", data=b"\x7fELF", sha256="0" * 64)

    with pytest.raises(grpc.RpcError) as err:
        _admit(stubs, packed(), tamper=tamper)
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT and "sha256" in err.value.details()
