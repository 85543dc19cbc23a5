"""The verification plan: secret-seeded, replayable, bounded by the op's token range, poisoned and padded."""

from __future__ import annotations

import random

import torch

from hotfloat.bundle import load_bundle
from hotfloat.slots import get_slot
from hotfloat.verify.plan import POISON_BITS, make_cases, padded_stride, poison, prepare, schedule

SILU = get_slot("activation.silu_and_mul")


def _op(make_bundle, metadata: str | None = None):
    files = {"metadata/m.json": metadata} if metadata else {}
    manifest = None
    if metadata:
        manifest = ('bundle_id = "b"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
                    'source = "kernels/k.py"\nentry = "run"\nmetadata = "metadata/m.json"\n')
    return load_bundle(make_bundle(manifest=manifest, files=files)).ops[0]


def _counts(op, seed):
    cases = make_cases(SILU, op, ["bf16"], "cpu", random.Random(seed), 3, None, 1 << 18)
    return [(c.label, c.counts) for c in cases]


def test_same_seed_replays_and_another_seed_differs(make_bundle):
    op = _op(make_bundle)
    assert _counts(op, 1) == _counts(op, 1)
    assert _counts(op, 1) != _counts(op, 2)


def test_counts_are_jittered_around_each_shape_and_a_secret_shape_is_added(make_bundle):
    op = _op(make_bundle)
    cases = make_cases(SILU, op, ["fp16", "fp32"], "cpu", random.Random(5), 3, None, None)
    public = [s for s in SILU.shapes if s.cpu]
    assert len(cases) == 2 * (len(public) + 1)
    assert sum(c.drawn for c in cases) == 2
    for case, shape in zip(cases, public):
        t = shape.dims["T"]
        spread = max(2, t // 4)
        assert all(max(1, t - spread) <= n <= t + spread for n in case.counts)
        assert case.pads[0] == 0 and case.pads[1] > 0


def test_counts_stay_inside_the_variants_token_range(make_bundle):
    op = _op(make_bundle, '{"min_num_tokens": 4, "max_num_tokens": 16}')
    for case in make_cases(SILU, op, ["bf16"], "cpu", random.Random(9), 3, None, None):
        assert all(4 <= n <= 16 for n in case.counts), case


def test_cpu_budget_scales_the_count_dim_but_not_the_hidden_dim(make_bundle):
    op = _op(make_bundle)
    cases = make_cases(SILU, op, ["bf16"], "cpu", random.Random(3), 3, None, 1 << 16)
    for case in cases:
        assert max(case.counts) <= max(3, (case.dims["T"] * 5) // 4 + 2)
        assert case.dims["T"] * 2 * case.dims["D"] <= 1 << 16 or case.dims["T"] == 1
    big = next(c for c in cases if c.public and c.public["T"] == 333)
    assert big.dims["D"] == 1440 and "cpu-scaled from T=333" in big.label


def test_poison_is_a_nan_payload_no_arithmetic_produces():
    for dtype, bits in POISON_BITS.items():
        p = poison(dtype, 3)
        assert torch.isnan(p).all()
        raw = p.view(torch.int16 if p.element_size() == 2 else torch.int32)[0].item()
        assert raw % (1 << (8 * p.element_size())) == bits


def test_padded_strides():
    assert padded_stride((3, 5), 8) == (13, 1)
    assert padded_stride((2, 3, 5), 0) == (15, 5, 1)
    assert padded_stride((7,), 8) == (1,)


def test_prepared_calls_reuse_storage_poison_outputs_and_pad_odd_trials(make_bundle):
    op = _op(make_bundle)
    case = make_cases(SILU, op, ["fp32"], "cpu", random.Random(4), 3, 2, None)[1]
    preps = [prepare(SILU, case, t, 100 + t, 0.0) for t in range(3)]
    storages = {tuple(h.storage for h, _ in p.sent) for p in preps}
    assert len(storages) == 1, "each trial must fit the same buffers, so pointers repeat across calls"
    strides = [p.outputs["out"].stride for p in preps]
    assert strides[0][0] == case.dims["D"] and strides[1][0] == case.dims["D"] + case.pads[1]
    assert not torch.equal(preps[0].inputs["x"][:1], preps[2].inputs["x"][:1]), "fresh inputs per trial"
    out_bytes = dict((h.name, d) for h, d in preps[1].sent)["out"]
    assert out_bytes == poison("fp32", preps[1].outputs["out"].storage).view(torch.uint8).numpy().tobytes()
    ref = preps[0].expected["out"]
    x = preps[0].inputs["x"].float()
    d = x.shape[1] // 2
    assert torch.allclose(ref, torch.nn.functional.silu(x[:, :d]) * x[:, d:])


def test_schedule_shuffles_every_call_once():
    cases = make_cases(SILU, type("O", (), {"metadata": type("M", (), {"min_num_tokens": 1, "max_num_tokens": None})()})(),
                       ["bf16"], "cpu", random.Random(1), 3, 2, None)
    calls = schedule(cases, 3, random.Random(2))
    assert sorted((c.case.index, c.trial) for c in calls) == [(c.index, t) for c in cases for t in range(3)]
    assert [(c.case.index, c.trial) for c in calls] != sorted((c.case.index, c.trial) for c in calls)
