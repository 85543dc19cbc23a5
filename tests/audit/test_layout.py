"""What an audited call keeps (hotfloat.audit.layout): for every kind, the call the validator rebuilds from an entry
is exactly the audited window of the original call (its reference equals the original reference there), a request
too long for an entry is not kept, and parameters that do not fit the call are refused."""

import pytest
import torch

from hotfloat.audit.layout import gather, layout_for, plain_dims, recast, to_words, window
from hotfloat.seams.domain import bind_dims
from hotfloat.slots import Role, get_slot


def call(slot, dims, seed, dtype=torch.bfloat16):
    spec = get_slot(slot)
    g = torch.Generator().manual_seed(seed)
    t = spec.make_inputs(dims, dtype, g) | (spec.make_scalars(dims, g) if spec.make_scalars else {})
    inputs = {a.name: t[a.name] for a in spec.of_role(Role.INPUT)}
    scalars = {a.name: float(t.get(a.name, a.default)) for a in spec.of_role(Role.SCALAR)}
    ref = spec.reference(t)
    return spec, inputs, scalars, {k: v.to(dtype) for k, v in ref.items()}, ref


def kept(spec, inputs, scalars, outputs, words, rows=4, context=4096):
    lay = layout_for(spec, plain_dims(bind_dims(spec, inputs)), "bf16", scalars, rows, context)
    params = window(lay, words, inputs)
    row = to_words(lay, params, gather(lay, params, inputs, False) | gather(lay, params, outputs, True))
    return lay, params, row


@pytest.mark.parametrize(
    "slot,dims",
    [
        ("activation.silu_and_mul", {"T": 13, "D": 64}),
        ("norm.rmsnorm", {"T": 5, "H": 96}),
        ("norm.fused_add_rmsnorm", {"T": 9, "H": 32}),
    ],
)
def test_a_rowwise_entry_is_its_window_of_rows(slot, dims):
    spec, inputs, scalars, outputs, _ = call(slot, dims, 1)
    for w0 in (0, 3, 7, 1 << 31):
        lay, params, row = kept(spec, inputs, scalars, outputs, (w0, 0, 0, 0))
        ins, outs, (start, r, total) = recast(lay, row)
        assert r == lay.rows == min(4, dims["T"]) and total == dims["T"] and start == w0 % (total - r + 1)
        for name, t in ins.items():
            want = inputs[name].reshape(-1, inputs[name].shape[-1])[start : start + r] if t.dim() == 2 else inputs[name]
            assert torch.equal(t, want)
        for name, t in outs.items():
            assert torch.equal(t, outputs[name][start : start + r])


def test_a_prefill_entry_is_one_request_and_head_with_its_whole_causal_context():
    dims = {"B": 4, "T": 40, "L": 24, "P": 128, "N": 128, "Hq": 8, "Hkv": 2, "D": 32}
    seen = set()
    for seed in range(12):
        spec, inputs, scalars, outputs, ref = call("attention.prefill", dims, seed)
        lay, params, row = kept(spec, inputs, scalars, outputs, (seed * 7919, seed * 31, seed * 104729, 0))
        ok, b, head, i0, r, new, cached, prefix, q0, p0 = params
        assert ok and prefix == cached + i0 and 1 <= r <= 4 and i0 + r <= new
        seen.add((cached > 0, i0 > 0))
        ins, outs, rows = recast(lay, row)
        assert rows == (i0, r, new) and ins["q"].shape == (r, 4, 32) and ins["k_buffer"].shape[1] == 1
        again = spec.reference(ins | scalars)["out"]
        g = 4  # query heads per KV head
        want = ref["out"][q0 + i0 : q0 + i0 + r, head * g : (head + 1) * g]
        assert torch.allclose(again, want, atol=1e-5, rtol=1e-5)  # the recast call is the original's window
        assert torch.equal(outs["out"], outputs["out"][q0 + i0 : q0 + i0 + r, head * g : (head + 1) * g])
    assert (True, True) in seen  # a request with a cached prefix and new tokens before its window


def test_a_decode_entry_is_one_request_and_head_over_its_pages():
    dims = {"B": 5, "S": 60, "P": 200, "N": 200, "Hq": 8, "Hkv": 1, "D": 32}
    for seed in range(6):
        spec, inputs, scalars, outputs, ref = call("attention.decode", dims, seed)
        lay, params, row = kept(spec, inputs, scalars, outputs, (seed * 13, seed, 0, 0))
        ok, b, head, length, _ = params[:5]
        ins, outs, rows = recast(lay, row)
        assert ok and rows == (b, 1, 5) and ins["k_buffer"].shape == (length, 1, 32)
        again = spec.reference(ins | scalars)["out"]
        assert torch.allclose(again, ref["out"][b : b + 1], atol=1e-5, rtol=1e-5)
        assert torch.equal(outs["out"], outputs["out"][b : b + 1])


def test_a_request_longer_than_an_entry_holds_is_not_kept():
    dims = {"B": 5, "S": 60, "P": 200, "N": 200, "Hq": 8, "Hkv": 1, "D": 32}
    spec, inputs, scalars, outputs, _ = call("attention.decode", dims, 0)
    lengths = inputs["kv_indptr"].diff()
    b = int(lengths.argmax())
    lay, params, row = kept(spec, inputs, scalars, outputs, (b, 0, 0, 0), context=int(lengths[b]) - 1)
    assert params[0] == 0 and not row[lay.pieces[-1].word :].any()  # nothing of it is gathered
    dims = {"B": 2, "T": 30, "L": 24, "P": 90, "N": 90, "Hq": 4, "Hkv": 2, "D": 16}
    spec, inputs, scalars, outputs, _ = call("attention.prefill", dims, 2)
    cached = inputs["kv_indptr"].diff()
    b = int(cached.argmax())
    lay, params, _ = kept(spec, inputs, scalars, outputs, (b, 0, 0, 0), context=int(cached[b]) - 1)
    assert params[0] == 0


def test_parameters_that_do_not_fit_the_call_are_refused():
    spec, inputs, scalars, outputs, _ = call("activation.silu_and_mul", {"T": 10, "D": 16}, 0)
    lay, params, row = kept(spec, inputs, scalars, outputs, (2, 0, 0, 0))
    for word, value in ((1, 7), (1, -1), (2, 3), (3, 11)):
        bad = row.clone()
        bad[word] = value
        assert isinstance(recast(lay, bad), str)
    dims = {"B": 4, "T": 40, "L": 24, "P": 128, "N": 128, "Hq": 8, "Hkv": 2, "D": 32}
    spec, inputs, scalars, outputs, _ = call("attention.prefill", dims, 1)
    lay, params, row = kept(spec, inputs, scalars, outputs, (1, 1, 1, 0))
    for word, value in ((1, 4), (2, 2), (4, 5), (4, 0), (7, 10**6), (3, 1000)):
        bad = row.clone()
        bad[word] = value
        assert isinstance(recast(lay, bad), str), (word, value)
