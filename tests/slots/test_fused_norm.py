"""norm.fused_add_rmsnorm's contract: registered, its shapes cover decode and prefill, its bytes formula, and its
tolerances admit both legitimate roundings while refusing the classic fusion mistakes."""

import pytest
import torch

from hotfloat.slots import DTYPES, SLOTS, Role, get_slot

SLOT = get_slot("norm.fused_add_rmsnorm")


def _check(dtype: str, got: dict, want: dict) -> bool:
    tol = SLOT.tolerances[dtype]
    return all(bool(((got[k].float() - want[k]).abs() <= tol.atol + tol.rtol * want[k].abs()).all()) for k in want)


def _inputs(t: int, h: int, dtype: str, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    return SLOT.make_inputs({"T": t, "H": h}, DTYPES[dtype], gen) | {"eps": 1e-6}


def test_registered_with_two_outputs_and_read_only_inputs():
    assert SLOTS["norm.fused_add_rmsnorm"] is SLOT
    assert [a.name for a in SLOT.of_role(Role.INPUT)] == ["x", "residual", "weight"]
    assert [a.name for a in SLOT.of_role(Role.OUTPUT)] == ["out", "residual_out"]
    assert SLOT.signature() == (
        "norm.fused_add_rmsnorm(x[T,H], residual[T,H], weight[H], out[T,H], residual_out[T,H], eps=1e-06)"
    )


def test_shapes_cover_decode_and_prefill_at_every_hidden_size():
    bench = {(s.dims["T"], s.dims["H"]) for s in SLOT.bench_shapes}
    assert {(t, h) for t in (1, 8, 32, 128, 256) for h in (896, 1536, 4096, 8192)} <= bench
    assert any(t >= 4096 for t, _ in bench)
    verify = SLOT.shapes
    assert {s.dims["T"] for s in verify} >= {1, 8, 32, 128, 256}
    assert {s.dims["H"] for s in verify} >= {896, 1536, 4096, 8192}
    assert any(s.dims["T"] >= 1024 and not s.cpu for s in verify)


def test_bytes_moved_counts_two_reads_two_writes_and_the_weight():
    assert SLOT.bytes_moved({"T": 8, "H": 4096}, 2) == (4 * 8 * 4096 + 4096) * 2


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_reference_is_the_fp32_sum_then_its_rmsnorm(dtype):
    t = _inputs(5, 896, dtype)
    ref = SLOT.reference(t)
    s = t["x"].double() + t["residual"].double()
    want = s / (s.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt() * t["weight"].double()
    assert torch.allclose(ref["residual_out"].double(), s) and torch.allclose(ref["out"].double(), want, atol=1e-5)
    assert ref["out"].dtype == ref["residual_out"].dtype == torch.float32


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_both_legitimate_roundings_pass(dtype):
    """Normalising the fp32 sum (sgl-kernel) or the rounded residual (torch add then rms_norm) are both in tolerance."""
    t = _inputs(64, 8192, dtype, seed=1)
    want = SLOT.reference(t)
    dt = DTYPES[dtype]
    s = t["x"].float() + t["residual"].float()
    fp32_sum = {
        "out": (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * t["weight"].float()).to(dt),
        "residual_out": s.to(dt),
    }
    r = t["x"] + t["residual"]
    rounded = {"out": torch.nn.functional.rms_norm(r, (8192,), t["weight"], 1e-6), "residual_out": r}
    assert _check(dtype, fp32_sum, want) and _check(dtype, rounded, want)


@pytest.mark.parametrize("mistake", ["forgets x", "normalises the stale residual", "skips the weight"])
def test_fusion_mistakes_fail_in_every_dtype(mistake):
    for dtype in ("bf16", "fp16", "fp32"):
        t = _inputs(8, 1536, dtype, seed=2)
        want = SLOT.reference(t)
        s = t["x"].float() + t["residual"].float()
        normed = t["residual"].float() if mistake != "skips the weight" else s
        if mistake == "forgets x":
            s = normed
        w = 1.0 if mistake == "skips the weight" else t["weight"].float()
        got = {"out": normed * torch.rsqrt(normed.pow(2).mean(-1, keepdim=True) + 1e-6) * w, "residual_out": s}
        assert not _check(dtype, got, want), (mistake, dtype)
