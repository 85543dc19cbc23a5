"""Declared parameter layouts follow the C ABI (plus Triton's scratch pointers); launch buffers and grids match them."""

import struct

import torch

from hotfloat.native import params


def test_layout_aligns_naturally_and_appends_triton_scratch():
    assert params.layout(["i32", "*bf16"], "cute") == ((0, 4), (8, 8))
    assert params.layout(["*fp32", "i32", "i64"], "triton") == ((0, 8), (8, 4), (16, 8), (24, 8), (32, 8))


def test_pack_places_values_at_their_offsets_and_nulls_scratch():
    buf = params.pack(["*fp16", "i32", "fp32"], "triton", [0xDEADBEEF, -3, 1.5])
    assert len(buf) == 32
    assert struct.unpack_from("<Q", buf, 0)[0] == 0xDEADBEEF
    assert struct.unpack_from("<i", buf, 8)[0] == -3
    assert struct.unpack_from("<f", buf, 12)[0] == 1.5
    assert buf[16:] == b"\0" * 16


def test_bind_resolves_pointers_dims_and_strides():
    x = torch.zeros(4, 10)
    out = torch.zeros(4, 16)[:, :5]
    values = params.bind(["x", "out", "D", "out_stride0"], {"x": x, "out": out}, {"T": 4, "D": 5})
    assert values == [x.data_ptr(), out.data_ptr(), 5, 16]


def test_grid_evaluates_names_cdiv_and_pads_to_three():
    assert params.grid(["T", "cdiv(D, 256)"], {"T": 7, "D": 257}) == (7, 2, 1)
    assert params.grid(["4"], {}) == (4, 1, 1)
