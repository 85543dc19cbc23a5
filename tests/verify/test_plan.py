"""The verification plan: secret-seeded, replayable, bounded by the op's token range, padded where it matters."""

from __future__ import annotations

import random

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.slots import get_slot
from hotfloat.verify.plan import PAD_STEP, corner_shapes, make_cases, schedule

SILU = get_slot("activation.silu_and_mul")


def _op(make_bundle, metadata: str | None = None):
    files = {"metadata/m.json": metadata} if metadata else {}
    manifest = None
    if metadata:
        manifest = (
            'bundle_id = "b"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
            'source = "kernels/k.py"\nentry = "run"\nmetadata = "metadata/m.json"\n'
        )
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
    assert len(cases) == 2 * (len(public) + 3), "per dtype: the public shapes, one drawn shape, two corners"
    assert sum(c.drawn for c in cases) == 6
    for case, shape in zip(cases, public, strict=False):
        t = shape.dims["T"]
        spread = max(2, t // 4)
        assert all(max(1, t - spread) <= n <= t + spread for n in case.counts)
        assert 0 in case.pads and any(case.pads)


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


@pytest.mark.parametrize("trials", [1, 2, 3])
def test_padded_rows_of_a_multi_row_case_occur_per_dtype_at_any_trial_count(make_bundle, trials):
    op = _op(make_bundle)
    for seed in range(6):
        cases = make_cases(SILU, op, ["bf16", "fp32"], "cpu", random.Random(seed), trials, 1, None)
        for dtype in ("bf16", "fp32"):
            mine = [c for c in cases if c.dtype == dtype]
            assert any(p and n > 1 for c in mine for p, n in zip(c.pads, c.counts, strict=False)), (trials, seed)
            assert all(p % PAD_STEP == 0 for c in mine for p in c.pads)
            if trials > 1:
                assert all(0 in c.pads and any(c.pads) for c in mine), "both layouts in every case"


def test_paddings_and_drawn_shapes_are_secret_over_the_slots_whole_range(make_bundle):
    op = _op(make_bundle)
    pads, hidden, counts = set(), set(), set()
    for seed in range(30):
        for case in make_cases(SILU, op, ["bf16"], "cuda", random.Random(seed), 3, 1, None):
            pads |= set(case.pads) - {0}
            if case.drawn:
                hidden.add(case.dims["D"])
                counts |= set(case.counts)
    assert len(pads) > 10, "paddings are drawn, not a published pair"
    published = {s.dims["D"] for s in (*SILU.shapes, *SILU.bench_shapes)}
    assert len(hidden - published) > 20 and min(hidden) < 512 and max(hidden) > 4096
    assert all(d % SILU.ranges["D"].multiple == 0 for d in hidden)
    assert min(counts) < 8 and max(counts) > 1024, "token counts span the range, not a pool"


def test_schedule_shuffles_every_call_once():
    cases = make_cases(
        SILU,
        type("O", (), {"metadata": type("M", (), {"min_num_tokens": 1, "max_num_tokens": None})()})(),
        ["bf16"],
        "cpu",
        random.Random(1),
        3,
        2,
        None,
    )
    calls = schedule(cases, 3, random.Random(2))
    assert sorted((c.case.index, c.trial) for c in calls) == [(c.index, t) for c in cases for t in range(3)]
    assert [(c.case.index, c.trial) for c in calls] != sorted((c.case.index, c.trial) for c in calls)


def test_corners_reach_the_top_of_every_hidden_range_misaligned_and_the_largest_counts_that_fit():
    r, budget = SILU.ranges["D"], 1 << 18
    for seed in range(50):
        (wide, wide_counts), (tall, tall_counts) = corner_shapes(SILU, random.Random(seed), 3, 1, None, budget)
        assert r.hi // 2 < wide["D"] <= r.hi and wide["D"] // r.multiple % 2 == 1, "top octave, odd multiple of 16"
        assert wide["T"] * 2 * wide["D"] <= budget and max(wide_counts) == wide["T"]
        assert tall["D"] <= 2 * r.lo
        top = budget // (2 * tall["D"])
        assert all(top // 2 <= n <= top for n in tall_counts), (tall, tall_counts)
    narrow = corner_shapes(SILU, random.Random(1), 3, 4, 16, budget)
    assert all(4 <= n <= 16 for _, counts in narrow for n in counts), "the variant's token range still holds"
