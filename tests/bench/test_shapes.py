"""Shape selection: the decode grid of issue 13, the CPU cut-off, and command-line shapes as hostile input."""

import pytest

from hotfloat.bench.shapes import DECODE_HIDDEN, DECODE_TOKENS, decode_shapes, parse_shape, select
from hotfloat.errors import InputError
from hotfloat.slots import get_slot


def test_decode_grid_covers_every_token_count_at_every_hidden_size():
    slot = get_slot("norm.rmsnorm")
    dims = {(s.dims["T"], s.dims["H"]) for s in decode_shapes(slot)}
    assert dims == {(t, h) for t in DECODE_TOKENS for h in DECODE_HIDDEN}


def test_all_merges_bench_and_decode_shapes_without_duplicates_and_cpu_drops_huge_ones():
    slot = get_slot("activation.silu_and_mul")
    cuda = select(slot, "all", [], "cuda")
    keys = [tuple(s.dims.values()) for s in cuda]
    assert len(keys) == len(set(keys))
    assert (4096, 8192) in keys and (1, 2880) in keys
    cpu = select(slot, "all", [], "cpu")
    assert all(s.dims["T"] * s.dims["D"] <= 128 * 4096 for s in cpu) and len(cpu) < len(cuda)


def test_explicit_shapes_apply_only_to_slots_with_the_same_dim_names():
    assert [s.dims for s in select(get_slot("norm.rmsnorm"), "all", [{"T": 3, "H": 64}], "cpu")] == [{"T": 3, "H": 64}]
    assert select(get_slot("activation.silu_and_mul"), "all", [{"T": 3, "H": 64}], "cpu") == []


@pytest.mark.parametrize("text", ["T=0,D=4", "T=1,D", "T=-1", "T=1;D=2", "=3", "T=1.5"])
def test_bad_shapes_are_input_errors(text):
    with pytest.raises(InputError):
        parse_shape(text)


def test_unknown_shape_set_is_an_input_error():
    with pytest.raises(InputError):
        select(get_slot("norm.rmsnorm"), "everything", [], "cpu")
