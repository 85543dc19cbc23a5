"""Input families: the spread real activations and weights have, drawn from the generator, finite in every dtype."""

import math

import torch

from hotfloat.slots import families, get_slot


def test_activations_span_orders_of_magnitude_with_outliers_and_zero_rows():
    x = families.activations(512, 1024, torch.Generator().manual_seed(1))
    rms = x.pow(2).mean(-1).sqrt()
    live = rms[rms > 0]
    assert (rms == 0).sum() > 20, "about one row in eight is all zeros"
    assert live.min() < 1e-2 and live.max() > 1e2, "row scales cover orders of magnitude"
    channel = x.abs().mean(0)
    assert channel.max() > 10 * channel.median(), "outlier channels"


def test_a_call_is_never_all_zeros_and_draws_differ():
    for seed in range(40):
        assert families.activations(1, 64, torch.Generator().manual_seed(seed)).abs().sum() > 0
    a, b = (families.activations(4, 64, torch.Generator().manual_seed(s)) for s in (1, 2))
    assert not torch.equal(a, b)


def test_fp16_inputs_keep_honest_results_finite():
    for name, dims in (
        ("activation.silu_and_mul", {"T": 256, "D": 512}),
        ("norm.rmsnorm", {"T": 256, "H": 512}),
        ("norm.fused_add_rmsnorm", {"T": 256, "H": 512}),
    ):
        slot = get_slot(name)
        for seed in range(5):
            t = slot.make_inputs(dims, torch.float16, torch.Generator().manual_seed(seed))
            ref = slot.reference({**t, "eps": 1e-6})
            assert all(torch.isfinite(v.to(torch.float16)).all() for v in ref.values()), (name, seed)
            assert all(torch.isfinite(v).all() for v in t.values())


def test_norm_weights_are_near_one_or_spread_like_trained_ones():
    kinds = set()
    for seed in range(20):
        w = families.norm_weight(4096, torch.Generator().manual_seed(seed))
        spread = math.log10(float(w.abs().max()) / max(float(w.abs().min()), 1e-12))
        kinds.add("spread" if spread > 3 and bool((w < 0).any()) else "near one")
    assert kinds == {"spread", "near one"}


def test_skipping_the_normalisation_or_squaring_in_fp16_misses_the_tolerance():
    slot = get_slot("norm.rmsnorm")
    tol = slot.tolerances["bf16"]
    t = slot.make_inputs({"T": 64, "H": 2880}, torch.bfloat16, torch.Generator().manual_seed(3))
    ref = slot.reference({**t, "eps": 1e-6})["out"]
    x, w = t["x"].float(), t["weight"].float()
    skipped = x * w
    squares = x.half().pow(2).float().mean(-1, keepdim=True)
    fp16 = x * torch.rsqrt(squares + 1e-6) * w
    for wrong in (skipped, fp16):
        assert ((wrong.to(torch.bfloat16).float() - ref).abs() > tol.atol + tol.rtol * ref.abs()).sum() > 100
