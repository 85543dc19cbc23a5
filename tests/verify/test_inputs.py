"""Each call's tensors: poison drawn per call, padded views of reused buffers, and the reference beside them."""

from __future__ import annotations

import random

import torch

from hotfloat.bundle import load_bundle
from hotfloat.slots import get_slot
from hotfloat.slots.norm import EPS_RANGE
from hotfloat.verify.inputs import QUIET_NAN, padded_stride, poison, prepare, row_padded_stride
from hotfloat.verify.plan import Case, make_cases

SILU = get_slot("activation.silu_and_mul")
RMSNORM = get_slot("norm.rmsnorm")


def test_poison_is_drawn_per_call_and_its_nans_are_never_arithmetics_own():
    for dtype, (width, quiet) in QUIET_NAN.items():
        draws = [poison(dtype, 4096, torch.Generator().manual_seed(s)) for s in range(12)]
        nans = [p for p in draws if bool(torch.isnan(p).all())]
        assert nans and len(nans) < len(draws), "NaN and non-NaN poison both occur"
        for p in nans:
            raw = p.view(torch.int16 if p.element_size() == 2 else torch.int32).long() & ((1 << width) - 1)
            assert not bool((raw == quiet).any()) and len(set(raw.tolist())) > 100, "random payloads, never canonical"
        nonzero = [p.view(torch.uint8).numpy().tobytes() for p in draws if bool(p.view(torch.uint8).any())]
        assert len(set(nonzero)) == len(nonzero), "each call draws its own poison"


def test_padded_strides():
    assert padded_stride((3, 5), 8) == (13, 1)
    assert padded_stride((2, 3, 5), 0) == (15, 5, 1)
    assert padded_stride((7,), 8) == (1,)


def test_prepared_calls_reuse_storage_poison_outputs_and_pad_some_trials(make_bundle):
    op = load_bundle(make_bundle()).ops[0]
    case = make_cases(SILU, op, ["fp32"], "cpu", random.Random(4), 3, 2, None)[1]
    preps = [prepare(SILU, case, t, 100 + t) for t in range(3)]
    storages = {tuple(h.storage for h, _ in p.sent) for p in preps}
    assert len(storages) == 1, "each trial must fit the same buffers, so pointers repeat across calls"
    strides = [p.outputs["out"].stride[0] for p in preps]
    assert strides == [case.dims["D"] + pad for pad in case.pads]
    assert not torch.equal(preps[0].inputs["x"][:1], preps[2].inputs["x"][:1]), "fresh inputs per trial"
    ref = preps[0].expected["out"]
    x = preps[0].inputs["x"].float()
    d = x.shape[1] // 2
    assert torch.allclose(ref, torch.nn.functional.silu(x[:, :d]) * x[:, d:])


def test_token_indexed_inputs_arrive_with_their_own_row_padding_and_stale_bytes_around_them():
    dims = {"T": 5, "H": 256}
    case = Case(0, "fp32", dims, (5, 4, 5), (0, 16, 0), input_pads=(24, 0, 8))
    preps = [prepare(RMSNORM, case, t, 10 + t) for t in range(3)]
    headers = [{h.name: h for h, _ in p.sent} for p in preps]
    assert [h["x"].stride for h in headers] == [row_padded_stride((5, 256), 24), (256, 1), (264, 1)]
    assert [h["out"].stride[0] for h in headers] == [256, 272, 256], "outputs pad independently"
    assert all(h["weight"].stride == (1,) for h in headers), "only token-indexed inputs are views of wider rows"
    assert len({h["x"].storage for h in headers}) == 1, "one buffer serves every trial"
    h, data = preps[0].sent[0]
    flat = torch.frombuffer(bytearray(data), dtype=torch.float32)
    assert torch.equal(flat.as_strided(h.shape, h.stride), preps[0].inputs["x"])
    assert bool(flat[256:280].ne(0).all()), "the padding holds stale values, not zeros a kernel could test for"
    assert row_padded_stride((2, 3, 4), 5) == (17, 4, 1), "3-D: only the leading dim steps past the rest"


def test_norm_eps_is_drawn_per_case_and_fixed_within_it():
    seen = set()
    for seed in range(20):
        case = Case(seed, "fp32", {"T": seed + 1, "H": 128}, (seed + 1, 1, 1), (0, 0, 0))
        eps = {prepare(RMSNORM, case, t, t).meta["args"][-1]["value"] for t in range(3)}
        assert len(eps) == 1, "a captured graph bakes the scalar in: one per case"
        seen |= eps
    assert len(seen) > 10 and all(EPS_RANGE[0] <= e <= EPS_RANGE[1] for e in seen)
    assert max(seen) / min(seen) > 100, "spread over orders of magnitude, so a hard-coded eps is wrong somewhere"
