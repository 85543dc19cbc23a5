"""The manifest's [ops.kernel] declaration: required for AOT kinds, bound only to names the slot defines."""

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.compiler import load_build
from hotfloat.errors import BundleError, InputError

HEAD = """\
bundle_id = "d"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "k"
kind = "{kind}"
architectures = [{arch}]
"""
KERNEL = """
[ops.kernel]
params = [{{ name = "{ptr}", type = "*T" }}, {{ name = "{dim}", type = "i32" }}]
grid = ["{grid}"]
"""


def _load(make_bundle, *, kind="triton", arch='"sm_90a"', ptr="x", dim="D", grid="T", kernel=True):
    manifest = HEAD.format(kind=kind, arch=arch) + (KERNEL.format(ptr=ptr, dim=dim, grid=grid) if kernel else "")
    return load_bundle(make_bundle("def k(x, out):\n    pass\n", manifest=manifest))


def test_valid_declaration_loads(make_bundle):
    op = _load(make_bundle).ops[0]
    assert [p.name for p in op.entry.kernel.params] == ["x", "D"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kernel": False}, "needs a [ops.kernel] table"),
        ({"kind": "python"}, "must not have one"),
        ({"arch": '"cpu", "sm_90a"'}, "remove 'cpu'"),
        ({"ptr": "weight"}, "pointer parameter 'weight' binds to nothing"),
        ({"dim": "H"}, "scalar parameter 'H' binds to nothing"),
        ({"grid": "cdiv(Q, 4)"}, "names no slot dim"),
        ({"grid": "T; rm -rf"}, "kernel.grid"),
    ],
)
def test_bad_declarations_are_refused(make_bundle, kwargs, message):
    with pytest.raises(BundleError, match=message.replace("[", r"\[").replace("(", r"\(")):
        _load(make_bundle, **kwargs)


def test_load_build_rechecks_digests(aot_builds):
    _, record = aot_builds["silu_cute_aot"]
    evidence = record.model_dump_json()
    assert load_build(evidence, record.cubins).artifact_digests() == record.artifact_digests()
    first = record.kernels[0].cubin
    with pytest.raises(InputError, match="digest"):
        load_build(evidence, {**record.cubins, first: record.cubins[first] + b"\0"})
    with pytest.raises(InputError, match="do not match"):
        load_build(evidence, {first: record.cubins[first]})
    with pytest.raises(InputError, match="build record"):
        load_build("{}", {})
