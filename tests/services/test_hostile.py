"""Issue 20's attacks on the wire: each request is refused INVALID_ARGUMENT with a one-line reason, and the same server
goes on serving the next caller."""

from __future__ import annotations

import gzip
import io
import tarfile

import grpc
import pytest

from hotfloat_services._proto import admission_pb2, admission_pb2_grpc, common_pb2, compiler_pb2, compiler_pb2_grpc
from hotfloat_services.common.auth import call_metadata
from hotfloat_services.common.transport import channel

MANIFEST = (
    b'bundle_id = "h"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    b'source = "kernels/k.py"\nentry = "run"\n'
)
KERNEL = b"def run(x, out):\n    out.copy_(x[:, : x.shape[1] // 2])\n"


def tar(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def longname(size: int) -> bytes:
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = tarfile.GNUTYPE_LONGNAME, size
    return info.tobuf(format=tarfile.USTAR_FORMAT) + bytes(64 << 10)


ATTACKS = {
    "deep manifest": (
        gzip.compress(tar({"manifest.toml": b"x = " + b"[" * 100_000 + b"]" * 100_000, "kernels/k.py": KERNEL})),
        "over the 65536-character limit",
    ),
    "1 GiB long name": (longname(1 << 30), "extended header of 1073741824 bytes"),
    "file and directory": (
        gzip.compress(tar({"manifest.toml": MANIFEST, "kernels/k.py": KERNEL, "kernels/k.py/evil.py": b"x = 1\n"})),
        "both a file and a directory",
    ),
    "min_num_tokens": (
        gzip.compress(
            tar(
                {
                    "manifest.toml": MANIFEST + b'metadata = "metadata/m.json"\n',
                    "kernels/k.py": KERNEL,
                    "metadata/m.json": b'{"min_num_tokens": 500000}',
                }
            )
        ),
        "beyond the slot's largest token count",
    ),
}


@pytest.fixture
def stubs(services, token):
    targets = services("compiler", "admission")
    with channel(targets["compiler"]) as c, channel(targets["admission"]) as a:
        yield compiler_pb2_grpc.CompilerStub(c), admission_pb2_grpc.AdmissionStub(a), call_metadata(token)


def refused(call) -> str:
    with pytest.raises(grpc.RpcError) as err:
        call()
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
    assert "\n" not in err.value.details()
    return err.value.details()


def test_hostile_archives_are_invalid_argument_and_the_server_keeps_serving(stubs, packed):
    compiler, admission, auth = stubs
    for name, (archive, why) in ATTACKS.items():
        bundle = common_pb2.BundleArchive(identity="0" * 64, archive=archive)
        assert why in refused(
            lambda: compiler.Scan(compiler_pb2.ScanRequest(bundle=bundle), timeout=30, metadata=auth)
        ), name
        assert why in refused(
            lambda: list(admission.Admit(admission_pb2.AdmitRequest(bundle=bundle), timeout=30, metadata=auth))
        ), name
    archive, identity = packed()
    good = common_pb2.BundleArchive(identity=identity, archive=archive)
    reply = compiler.Scan(compiler_pb2.ScanRequest(bundle=good), timeout=30, metadata=auth)
    assert reply.verdict.status == common_pb2.PASS


def test_a_deep_build_record_is_invalid_argument(stubs, packed):
    _, admission, auth = stubs
    archive, identity = packed()
    deep = common_pb2.Verdict(status=common_pb2.PASS, evidence_json="[" * 100_000 + "]" * 100_000)
    request = admission_pb2.AdmitRequest(
        bundle=common_pb2.BundleArchive(identity=identity, archive=archive),
        build=compiler_pb2.BuildResult(verdict=deep),
    )
    assert "nested deeper than" in refused(lambda: list(admission.Admit(request, timeout=30, metadata=auth)))
