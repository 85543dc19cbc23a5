"""The seam router: routes inside the declared domain, stock outside, counts both, never falls back silently."""

from pathlib import Path

import pytest
import torch

from hotfloat.errors import BundleError
from hotfloat.seams import (
    ENV_BUNDLE,
    ENV_IDENTITY,
    ENV_TWIN_IDENTITY,
    ENV_TWIN_OF,
    SeamCount,
    SeamLoadError,
    arm,
    arm_from_env,
)
from hotfloat.bundle import load_bundle

FIXTURES = Path(__file__).parent / "fixtures"


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_norm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight).to(x.dtype)


def test_null_armed_sends_everything_to_stock():
    router = arm(None)
    x = torch.randn(4, 16)
    assert torch.equal(router.silu_and_mul(x, stock=stock_silu), stock_silu(x))
    assert router.identity is None
    assert router.counts()["activation.silu_and_mul"] == SeamCount(routed=0, stock=1)


def test_exact_bundle_is_routed_byte_identical_with_leading_dims():
    router = arm(FIXTURES / "silu_exact")
    x = torch.randn(2, 3, 64, dtype=torch.bfloat16)
    y = router.silu_and_mul(x, stock=lambda x: pytest.fail("stock called inside the domain"))
    assert y.shape == (2, 3, 32) and y.dtype == torch.bfloat16
    assert torch.equal(y, stock_silu(x))
    assert router.counts()["activation.silu_and_mul"] == SeamCount(routed=1, stock=0)


def test_broken_bundle_changes_the_output():
    router = arm(FIXTURES / "silu_broken")
    x = torch.randn(8, 64)
    assert not torch.equal(router.silu_and_mul(x, stock=stock_silu), stock_silu(x))
    assert router.counts()["activation.silu_and_mul"].routed == 1


@pytest.mark.parametrize(
    "tokens,dtype,routed",
    [
        (1, torch.float32, False),  # below min_num_tokens
        (2, torch.float32, True),
        (64, torch.bfloat16, True),
        (65, torch.float32, False),  # above max_num_tokens
        (8, torch.float16, False),  # dtype not declared
    ],
)
def test_domain_decides_per_call(tokens, dtype, routed):
    router = arm(FIXTURES / "rmsnorm_exact")
    x, w = torch.randn(tokens, 32, dtype=dtype), torch.rand(32, dtype=dtype) + 0.5
    y = router.rmsnorm(x, w, 1e-6, stock=stock_norm)
    assert torch.equal(y, stock_norm(x, w, 1e-6))
    assert router.counts()["norm.rmsnorm"] == SeamCount(routed=int(routed), stock=int(not routed))


def test_contradicting_shapes_go_stock():
    router = arm(FIXTURES / "rmsnorm_exact")
    x, w = torch.randn(4, 32), torch.ones(16)
    assert router.rmsnorm(x, w, 1e-6, stock=lambda *a: "stock") == "stock"
    assert router.counts()["norm.rmsnorm"].stock == 1


def test_slot_without_armed_op_goes_stock():
    router = arm(FIXTURES / "rmsnorm_exact")
    x = torch.randn(4, 16)
    assert torch.equal(router.silu_and_mul(x, stock=stock_silu), stock_silu(x))
    assert router.counts()["activation.silu_and_mul"] == SeamCount(routed=0, stock=1)


def test_arm_from_env_and_identity_pin():
    path = FIXTURES / "silu_exact"
    identity = load_bundle(path).identity
    assert arm_from_env({ENV_BUNDLE: str(path), ENV_IDENTITY: identity}).identity == identity
    assert arm_from_env({}).identity is None
    with pytest.raises(SeamLoadError, match="expected"):
        arm_from_env({ENV_BUNDLE: str(path), ENV_IDENTITY: "0" * 64})


def test_missing_or_invalid_bundle_raises(tmp_path, make_bundle):
    with pytest.raises(SeamLoadError, match="not a bundle directory"):
        arm(tmp_path / "absent")
    bad = make_bundle(manifest="bundle_id = 'x'\n")
    with pytest.raises(BundleError):
        arm(bad)


@pytest.mark.parametrize(
    "kernel,match",
    [
        ("raise RuntimeError('boom')\n", "failed: RuntimeError$"),
        ("import sys\nsys.exit(3)\n", "SystemExit"),
        ("def other(x, out):\n    pass\n", "no callable 'run'"),
        ("def run(x, out:\n", "SyntaxError"),
        (  # a metaclass's __name__ is candidate code the report must not run
            "class M(type):\n    __name__ = property(lambda c: exit(7))\n"
            "class Oops(Exception, metaclass=M):\n    pass\nraise Oops()\n",
            "failed: Oops$",
        ),
    ],
)
def test_candidate_import_failures_raise(make_bundle, kernel, match):
    with pytest.raises(SeamLoadError, match=match):
        arm(make_bundle(kernel))


def test_bundle_modules_import_siblings(make_bundle):
    kernel = "from . import helper\n\ndef run(x, out):\n    helper.fill(x, out)\n"
    helper = "def fill(x, out):\n    out.copy_(x[:, x.shape[1] // 2:])\n"
    router = arm(make_bundle(kernel, files={"kernels/helper.py": helper}))
    x = torch.randn(3, 8)
    assert torch.equal(router.silu_and_mul(x, stock=stock_silu), x[:, 4:])


def test_replayed_calls_add_to_the_counts():
    """A CUDA graph replays captured seam calls without reaching the router; the engine adds them back."""
    router = arm(FIXTURES / "silu_exact")
    router.silu_and_mul(torch.randn(2, 64, dtype=torch.bfloat16), stock=stock_silu)
    router.add_counts({"activation.silu_and_mul": SeamCount(routed=3, stock=1), "norm.rmsnorm": SeamCount(stock=2)})
    counts = router.counts()
    assert counts["activation.silu_and_mul"] == SeamCount(routed=4, stock=1)
    assert counts["norm.rmsnorm"] == SeamCount(routed=0, stock=2)


def stock_fused(x, residual, weight, eps):
    s = x.float() + residual.float()
    return stock_norm(s, weight, eps).to(x.dtype), s.to(x.dtype)


def test_fused_add_rmsnorm_returns_both_fresh_outputs_and_leaves_inputs_alone():
    router = arm(FIXTURES / "engine_exact")
    x, r = torch.randn(2, 3, 32, dtype=torch.bfloat16), torch.randn(2, 3, 32, dtype=torch.bfloat16)
    w = (torch.rand(32) + 0.5).to(torch.bfloat16)
    x0, r0 = x.clone(), r.clone()
    out, residual_out = router.fused_add_rmsnorm(x, r, w, 1e-6, stock=lambda *a: pytest.fail("stock in the domain"))
    want_out, want_residual = stock_fused(x0, r0, w, 1e-6)
    assert out.shape == residual_out.shape == (2, 3, 32) and out.dtype == torch.bfloat16
    assert torch.equal(out, want_out) and torch.equal(residual_out, want_residual)
    assert torch.equal(x, x0) and torch.equal(r, r0)
    assert out.data_ptr() not in (x.data_ptr(), r.data_ptr()) and residual_out.data_ptr() != r.data_ptr()
    assert router.counts()["norm.fused_add_rmsnorm"] == SeamCount(routed=1, stock=0)


@pytest.mark.parametrize(
    "x_shape,r_shape,r_dtype",
    [
        ((8, 32), (8, 32), torch.bfloat16),  # the routed baseline of this table
        ((8, 32), (8, 32), torch.float16),  # residual dtype differs from x (an fp32 residual stream, say)
        ((2, 4, 32), (8, 32), torch.bfloat16),  # same token count, different leading dims
        ((8, 32), (4, 32), torch.bfloat16),  # token counts disagree
    ],
)
def test_fused_add_rmsnorm_goes_stock_unless_the_inputs_agree(x_shape, r_shape, r_dtype):
    router = arm(FIXTURES / "engine_exact")
    x, r = torch.randn(x_shape, dtype=torch.bfloat16), torch.randn(r_shape).to(r_dtype)
    w = torch.ones(32, dtype=torch.bfloat16)
    result = router.fused_add_rmsnorm(x, r, w, 1e-6, stock=lambda *a: "stock")
    routed = (x_shape, r_shape, r_dtype) == ((8, 32), (8, 32), torch.bfloat16)
    assert (result != "stock") is routed
    assert router.counts()["norm.fused_add_rmsnorm"] == SeamCount(routed=int(routed), stock=int(not routed))


def ulps(a, b):
    return b.view(torch.int16).int() - a.view(torch.int16).int()


def test_twin_nudges_only_enabled_slots_inside_the_candidates_domain_without_importing_it(make_bundle):
    """The gate's twin: stock results, nudged only where the candidate would run and only for the slots the validator
    enabled (none by default); the candidate's code is never imported (this one raises on import)."""
    cand = make_bundle("raise RuntimeError('imported')\n", name="unimportable")
    router = arm(None, twin_of=cand)
    assert router.identity is None and router.slots == {"activation.silu_and_mul"}
    x = torch.randn(64, 64, dtype=torch.bfloat16)
    want = stock_silu(x)
    assert torch.equal(router.silu_and_mul(x, stock=stock_silu), want)  # disabled by default
    assert router.set_twin_slots({"activation.silu_and_mul", "norm.rmsnorm"}) == {"activation.silu_and_mul"}
    y = router.silu_and_mul(x, stock=stock_silu)
    assert not torch.equal(y, want) and int(ulps(want, y).abs().max()) == 1
    assert torch.equal(router.silu_and_mul(x, stock=stock_silu), y)  # a fixed-seed hash: replays agree
    assert router.counts()["activation.silu_and_mul"] == SeamCount(routed=3, stock=0)
    w = torch.ones(64)
    assert torch.equal(router.rmsnorm(x.float(), w, 1e-6, stock=stock_norm), stock_norm(x.float(), w, 1e-6))
    assert router.counts()["norm.rmsnorm"] == SeamCount(routed=0, stock=1)
    router.set_twin_slots(set())
    assert torch.equal(router.silu_and_mul(x, stock=stock_silu), want)


def test_the_twins_nudge_is_unbiased_and_the_size_of_an_accurate_kernels_rounding():
    """A quarter of the elements move by exactly one ulp, half of those up in magnitude and half down, so the mean
    perturbation is zero; zeros, infinities and NaN stay."""
    from hotfloat.seams.twin import stochastic_ulp

    t = torch.randn(200_000, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    t[:3] = torch.tensor([0.0, float("inf"), float("nan")])
    y = stochastic_ulp(t, torch.tensor(True))
    moved = ulps(t, y)
    assert moved.abs().max() == 1 and torch.equal(y[:2], t[:2]) and y[2].isnan()
    assert abs(float((moved != 0).float().mean()) - 0.25) < 0.01
    up = int((y.float().abs() > t.float().abs()).sum())
    down = int((y.float().abs() < t.float().abs()).sum())
    assert abs(up - down) < 4 * (up + down) ** 0.5
    rel = (y.float() - t.float())[3:] / t.float()[3:].abs().clamp(min=1e-30)
    assert abs(float(rel.mean())) < 1e-4  # an ulp is 4e-3 relative: the mean is 40x smaller than a moved element
    assert torch.equal(stochastic_ulp(t, torch.tensor(False))[3:], t[3:])


def test_the_twins_nudge_in_pieces_is_the_nudge_in_one_and_keeps_the_shape():
    """The hash runs piece by piece to bound its temporaries; every element still gets the hash of its own index."""
    from hotfloat.seams.twin import stochastic_ulp

    t = torch.randn(37, 41, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    whole = stochastic_ulp(t, torch.tensor(True), chunk=t.numel())
    for chunk in (1, 100, 1000):
        got = stochastic_ulp(t, torch.tensor(True), chunk=chunk)
        assert got.shape == t.shape and torch.equal(got.view(torch.int16), whole.view(torch.int16))
    strided = t.t()  # a transposed view: the index is the logical one
    assert torch.equal(
        stochastic_ulp(strided, torch.tensor(True), chunk=50).view(torch.int16),
        stochastic_ulp(strided.contiguous(), torch.tensor(True)).view(torch.int16),
    )


def test_the_twin_leaves_the_residual_stream_alone():
    path = FIXTURES / "engine_exact"
    router = arm(None, twin_of=path)
    router.set_twin_slots({"norm.fused_add_rmsnorm"})
    x, r = torch.randn(16, 32, dtype=torch.bfloat16), torch.randn(16, 32, dtype=torch.bfloat16)
    w = torch.ones(32, dtype=torch.bfloat16)
    out, residual_out = router.fused_add_rmsnorm(x, r, w, 1e-6, stock=stock_fused)
    want_out, want_residual = stock_fused(x, r, w, 1e-6)
    assert torch.equal(residual_out, want_residual) and not torch.equal(out, want_out)
    assert int(ulps(want_out, out).abs().max()) == 1


def test_the_handicap_delays_every_silu_call():
    import time

    router = arm(None, handicap_us=20_000)
    t0 = time.perf_counter()
    router.silu_and_mul(torch.randn(2, 16), stock=stock_silu)
    assert time.perf_counter() - t0 >= 0.02
    fastest = float("inf")
    for _ in range(5):  # the fastest of five: a loaded CI host may stall any single call past the handicap
        t0 = time.perf_counter()
        router.rmsnorm(torch.randn(2, 16), torch.ones(16), 1e-6, stock=stock_norm)
        fastest = min(fastest, time.perf_counter() - t0)
    assert fastest < 0.02


def test_twin_of_an_armed_baseline_nudges_the_baselines_outputs():
    """With an incumbent armed, the twin is that baseline engine nudged: the armed op serves, then the nudge."""
    path = FIXTURES / "silu_exact"
    router = arm_from_env(
        {ENV_BUNDLE: str(path), ENV_TWIN_OF: str(path), ENV_TWIN_IDENTITY: load_bundle(path).identity}
    )
    router.set_twin_slots({"activation.silu_and_mul"})
    x = torch.randn(16, 64, dtype=torch.bfloat16)
    y = router.silu_and_mul(x, stock=lambda x: pytest.fail("stock called inside the armed domain"))
    want = stock_silu(x)
    assert not torch.equal(y, want) and int(ulps(want, y).abs().max()) == 1
    assert router.counts()["activation.silu_and_mul"] == SeamCount(routed=1, stock=0)
    with pytest.raises(SeamLoadError, match="twin's bundle .* expected"):
        arm_from_env({ENV_TWIN_OF: str(path), ENV_TWIN_IDENTITY: "0" * 64})
