"""Deviceless builds of hostile sources: both examples build to gated cubins; a compile error, a kernel that does not
match its declaration, a hang and an escape attempt each end as a FAIL record with the reason."""

import textwrap

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.compiler import build_bundle
from hotfloat.verdict import Status

TRITON_OP = """\
bundle_id = "t"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "k"
kind = "triton"
dtypes = ["fp32"]
architectures = ["sm_90a"]

[ops.kernel]
params = [{{ name = "x", type = "*T" }}, {{ name = "out", type = "*T" }}, {{ name = "D", type = "{d_type}" }}]
grid = ["T"]
"""
KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def k(x, out, D):
    i = tl.program_id(0)
    tl.store(out + i, tl.load(x + i) {body})
"""


def _bundle(make_bundle, *, body="", d_type="i32", prelude="", signature="x, out, D"):
    source = prelude + KERNEL.format(body=body).replace("x, out, D", signature)
    return load_bundle(make_bundle(source, manifest=TRITON_OP.format(d_type=d_type)))


def test_examples_build_for_every_dtype(aot_builds):
    for name, (bundle, record) in aot_builds.items():
        assert record.status is Status.PASS, record.reasons
        assert sorted(k.dtype for k in record.kernels) == ["bf16", "fp16", "fp32"]
        assert set(record.cubins) == {k.cubin for k in record.kernels}
        k = record.kernels[0]
        assert k.inputs["bundle"] == bundle.identity and k.arch == "sm_90a"
        assert set(k.inputs) == {"source", "manifest", "declaration", "bundle", "toolchain"}
        assert record.toolchain[{"silu_triton_aot": "triton", "silu_cute_aot": "nvidia-cutlass-dsl"}[name]] != "missing"


def test_builds_are_reproducible(aot_builds):
    bundle, record = aot_builds["silu_triton_aot"]
    again = build_bundle(bundle)
    assert again.artifact_digests() == record.artifact_digests()


def test_python_only_bundle_has_nothing_to_build(make_bundle):
    record = build_bundle(load_bundle(make_bundle()))
    assert record.status is Status.N_A and not record.kernels


def test_compile_error_fails_with_reason(make_bundle):
    record = build_bundle(_bundle(make_bundle, body="+ undefined_name"))
    assert record.status is Status.FAIL
    assert "build failed" in record.reasons[0]


def test_kernel_must_take_the_declared_parameters(make_bundle):
    record = build_bundle(_bundle(make_bundle, signature="x, D, out"))
    assert record.status is Status.FAIL
    assert "takes ['x', 'D', 'out'], but the manifest declares ['x', 'out', 'D']" in record.reasons[0]


def test_hang_is_killed_at_the_timeout(make_bundle):
    record = build_bundle(_bundle(make_bundle, prelude="while True:\n    pass\n"), timeout_s=4)
    assert record.status is Status.FAIL
    assert "timed out after 4s" in record.reasons[0]


def test_build_has_no_network_and_a_read_only_host(make_bundle, tmp_path):
    escape = textwrap.dedent(f"""\
        import socket
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=3)
            net = "open"
        except OSError:
            net = "closed"
        try:
            open("{tmp_path}/escaped", "w").write("x")
            disk = "writable"
        except OSError:
            disk = "read-only"
        raise SystemExit(f"net={{net}} disk={{disk}}")
    """)
    record = build_bundle(_bundle(make_bundle, prelude=escape))
    assert record.status is Status.FAIL
    assert "net=closed disk=read-only" in record.reasons[0]
    assert not (tmp_path / "escaped").exists()


def test_unknown_arch_is_refused(make_bundle):
    from hotfloat.errors import InputError

    with pytest.raises(InputError, match="architecture"):
        build_bundle(load_bundle(make_bundle()), arch="sm_1")
