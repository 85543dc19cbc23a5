"""The one cubin-against-declaration check: a built cubin passes for its own op, and each way of not holding what the
manifest declares (another kernel, another name, another layout, not a cubin) is refused with the reason."""

import dataclasses

import pytest

from hotfloat.native.declared import check_cubin, declared_types
from hotfloat.native.elf import CubinRefused


def _built(aot_builds, example):
    bundle, record = aot_builds[example]
    art = record.kernels[0]
    op = next(o for o in bundle.ops if o.key == art.op)
    return op, art, record.cubins[art.cubin]


def _with_kernel(op, **changes):
    kernel = op.entry.kernel.model_copy(update=changes)
    return dataclasses.replace(op, entry=op.entry.model_copy(update={"kernel": kernel}))


@pytest.mark.parametrize("example", ["silu_triton_aot", "silu_cute_aot"])
def test_a_built_cubin_holds_its_declaration(aot_builds, example):
    op, art, data = _built(aot_builds, example)
    assert [list(p) for p in check_cubin(op, art.dtype, art.symbol, data)] == [list(p) for p in art.layout]
    assert declared_types(op, art.dtype) == art.param_types


def test_another_ops_cubin_is_not_the_declared_kernel(aot_builds):
    op, art, _ = _built(aot_builds, "silu_triton_aot")
    _, _, foreign = _built(aot_builds, "silu_cute_aot")
    with pytest.raises(CubinRefused, match="not exactly the declared"):
        check_cubin(op, art.dtype, art.symbol, foreign)


def test_a_cute_kernel_must_carry_the_declared_name(aot_builds):
    op, art, data = _built(aot_builds, "silu_cute_aot")
    with pytest.raises(CubinRefused, match="is not the declared one"):
        check_cubin(_with_kernel(op, symbol="other"), art.dtype, art.symbol, data)


def test_a_layout_other_than_the_declared_one_is_refused(aot_builds):
    op, art, data = _built(aot_builds, "silu_triton_aot")
    fewer = _with_kernel(op, params=op.entry.kernel.params[:-1])
    with pytest.raises(CubinRefused, match="differs from the declared"):
        check_cubin(fewer, art.dtype, art.symbol, data)


def test_bytes_that_are_no_cubin_are_refused(aot_builds):
    op, art, data = _built(aot_builds, "silu_triton_aot")
    with pytest.raises(CubinRefused, match="bad magic"):
        check_cubin(op, art.dtype, art.symbol, b"\0" + data[1:])
