"""collective.ar_residual_rmsnorm's contract: registered in Cacheon's call order, x per rank and residual and weight
replicated, an fp32 reference over every rank's x, and a rounding scale that admits the engine's own bf16 reduction at
2, 4 and 8 ranks while the classic mistakes (no reduction, no residual, the residual on every rank) are far
outside it."""

import pytest
import torch

from hotfloat.slots import DTYPES, SLOTS, Role, get_slot
from hotfloat.slots.collective import stack_ranks

SLOT = get_slot("collective.ar_residual_rmsnorm")


def _ranks(world: int, dtype: str, seed: int, t: int = 48, h: int = 1536) -> list[dict]:
    """Every rank's inputs as verification draws them: its own x, rank 0's residual and weight, one drawn eps."""
    ranks = []
    for r in range(world):
        gen = torch.Generator().manual_seed(1000 * seed + r)
        ranks.append(SLOT.make_inputs({"T": t, "H": h}, DTYPES[dtype], gen))
    eps = SLOT.make_scalars({"T": t, "H": h}, torch.Generator().manual_seed(seed))["eps"]
    return [r | {n: ranks[0][n] for n in SLOT.replicated} | {"eps": eps} for r in ranks]


def _within(dtype: str, got: dict, ranks: list[dict]) -> bool:
    """The collective verifier's test: every element within atol + rtol * the slot's rounding scale."""
    ranked = stack_ranks(SLOT, ranks)
    want = SLOT.reference(ranked)
    scale = SLOT.rounding_scale(ranked, want)
    tol = SLOT.tolerances[dtype]
    return all(bool(((got[k].float() - want[k]).abs() <= tol.atol + tol.rtol * scale[k]).all()) for k in want)


def _engine(ranks: list[dict]) -> dict:
    """SGLang's unfused path: an all-reduce that keeps every partial sum in the op dtype, then torch's add and
    rms_norm on the rounded sum."""
    acc = ranks[0]["x"].clone()
    for r in ranks[1:]:
        acc = acc + r["x"]
    s = acc + ranks[0]["residual"]
    return {
        "out": torch.nn.functional.rms_norm(s, (s.shape[-1],), ranks[0]["weight"], ranks[0]["eps"]),
        "residual_out": s,
    }


def _fp32_math(ranks: list[dict], *, reduce=True, residual_once=True, eps=None) -> dict:
    s = sum(r["x"].float() for r in ranks) if reduce else ranks[0]["x"].float()
    s = s + ranks[0]["residual"].float() * (1 if residual_once else len(ranks))
    e = ranks[0]["eps"] if eps is None else eps
    return {"out": s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + e) * ranks[0]["weight"].float(), "residual_out": s}


def test_registered_in_cacheons_call_order_with_the_group_last():
    assert SLOTS["collective.ar_residual_rmsnorm"] is SLOT and SLOT.world_size == 2
    assert [a.name for a in SLOT.args] == ["x", "residual", "weight", "eps", "out", "residual_out", "group"]
    assert [a.name for a in SLOT.of_role(Role.OUTPUT)] == ["out", "residual_out"]
    assert SLOT.replicated == ("residual", "weight") and not SLOT.strided_outputs
    assert SLOT.signature() == (
        "collective.ar_residual_rmsnorm(x[T,H], residual[T,H], weight[H], eps=1e-06, out[T,H], residual_out[T,H], "
        "group:ProcessGroup)"
    )


def test_shapes_cover_decode_and_prefill_and_stay_small_on_cpu():
    cpu = [s for s in SLOT.shapes if s.cpu]
    assert {s.dims["T"] for s in SLOT.shapes} >= {1, 8, 32, 128, 256, 2048}
    assert all(s.dims["T"] * s.dims["H"] <= 1 << 18 for s in cpu) and len(cpu) == 4
    assert {(s.dims["T"], s.dims["H"]) for s in SLOT.bench_shapes} >= {(t, 8192) for t in (1, 8, 32, 128, 512)}


@pytest.mark.parametrize("world", [1, 3])
def test_reference_sums_every_ranks_x_then_adds_the_residual_and_normalises(world):
    ranks = _ranks(world, "fp32", seed=4, t=5, h=896)
    ref = SLOT.reference(stack_ranks(SLOT, ranks))
    s = sum(r["x"].double() for r in ranks) + ranks[0]["residual"].double()
    want = s / (s.pow(2).mean(-1, keepdim=True) + ranks[0]["eps"]).sqrt() * ranks[0]["weight"].double()
    assert torch.allclose(ref["residual_out"].double(), s) and torch.allclose(ref["out"].double(), want, atol=1e-5)


@pytest.mark.parametrize("world", [2, 4, 8])
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_the_engines_own_rounding_passes(world, dtype):
    for seed in range(3):
        ranks = _ranks(world, dtype, seed)
        assert _within(dtype, _engine(ranks), ranks), (world, dtype, seed)
        exact = {k: v.to(DTYPES[dtype]) for k, v in _fp32_math(ranks).items()}
        assert _within(dtype, exact, ranks)


@pytest.mark.parametrize(
    "mistake",
    [{"reduce": False}, {"residual_once": False}],
    ids=["rank-local", "residual-on-every-rank"],
)
def test_the_classic_mistakes_fail(mistake):
    for dtype in ("bf16", "fp16", "fp32"):
        failed = 0
        for seed in range(3):
            ranks = _ranks(2, dtype, seed, t=64)
            failed += not _within(
                dtype, {k: v.to(DTYPES[dtype]) for k, v in _fp32_math(ranks, **mistake).items()}, ranks
            )
        assert failed == 3, (mistake, dtype)


def test_forgetting_the_residual_fails():
    ranks = _ranks(2, "bf16", seed=7)
    no_residual = [r | {"residual": torch.zeros_like(r["residual"])} for r in ranks]
    assert not _within("bf16", _fp32_math(no_residual), ranks)
