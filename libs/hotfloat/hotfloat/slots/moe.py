"""moe.fused_experts and moe.fused_experts_reduce: a mixture-of-experts layer's routed SwiGLU experts, the call SGLang's
FusedMoE makes once per MoE layer with the router's top-k already chosen.

Token t goes to the K experts `topk_ids[t]` with weights `topk_weights[t]` (both from SGLang's TopK: int32 ids, fp32
weights, the layout its triton fused_moe kernel reads). Expert e holds `w13[e] = [gate; up]` ([2I, H], gate rows
first, as FusedMoE loads w1 then w3) and `w2[e]` ([H, I]); the entry writes
`out[t] = sum_k topk_weights[t, k] * w2[e] @ (silu(gate_e x_t) * up_e x_t)` with e = topk_ids[t, k]. The
`_reduce` slot is the same layer under tensor parallelism, owning the all-reduce that follows it: each rank holds its
shard of every expert (its own w13 and w2, I per rank) and the same tokens and routing, and writes the sum over ranks
of the local results, so one kernel may overlap the expert GEMMs with the communication.

Verification draws routing that exposes the usual shortcuts: every token's K experts are distinct and in random
order, at least one expert gets no token at all, the others' loads are skewed (log-normal popularity) and a quarter
of the calls send every token to one hot expert, so a kernel that sizes per-expert work for balanced loads, assumes
sorted ids, or touches experts nobody chose is caught. Weights are drawn per call (renormalised to 1 half the time):
a kernel that ignores them or assumes they sum to 1 is off by O(1). Hidden states are randn rows at 1/4x-1.5x scale with
zero rows (padded tokens). A bf16 kernel rounds the [T*K, 2I] intermediate and each expert's weighted result before
the K are added, as SGLang's does, so its error follows the sum of the K results' magnitudes, not their sum, which
cancels: rtol applies to sum_k |topk_weights[t,k] * expert result| (on the H100, SGLang's own kernel missed the
tolerance on up to 119 of 4M elements when rtol applied to |out|). The expert weights are drawn per call too: a
kernel must not keep a re-laid-out copy between calls.
"""

from __future__ import annotations

from .spec import ArgSpec, Role, Shape, SlotSpec

HOT_ODDS = 4
"""About one call in this many routes every token to the same hot expert."""
ROW_SCALES = (0.25, 1.5)
"""Per-token scale of the hidden state, log-uniform. The output grows with its square (gate times up): at 1.5x an
honest bf16 kernel rounding like SGLang's uses at most 76% of the tolerance (emulated on the CPU over every bench
shape, two draws each; the mixtral-8b layer at 2048 tokens is the worst), and SGLang's kernel passed every bench
shape on the H100."""
ZERO_ROW_ODDS = 8


def experts(x, ids, weights, w13, w2, magnitude: bool = False):
    """The fp32 layer for one rank's experts: each routed expert's tokens as one dense GEMM pair, summed per token;
    with `magnitude`, the sum of the weighted results' absolute values instead (what a kernel's rounding follows)."""
    import torch

    x32, inter = x.float(), w2.shape[-1]
    out = torch.zeros_like(x32)
    for e in ids.unique().tolist():
        rows, slot = (ids == e).nonzero(as_tuple=True)
        h = x32[rows] @ w13[e].float().T
        y = (torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]) @ w2[e].float().T
        y = y * weights[rows, slot].float()[:, None]
        out.index_add_(0, rows, y.abs() if magnitude else y)
    return out


def _reference(t):
    return {"out": experts(t["x"], t["topk_ids"], t["topk_weights"], t["w13"], t["w2"])}


def _scale(t, expected):
    return {"out": experts(t["x"], t["topk_ids"], t["topk_weights"], t["w13"], t["w2"], magnitude=True)}


def _partials(t, magnitude: bool = False):
    route = t["x"], t["topk_ids"], t["topk_weights"]
    return [experts(*route, a, b, magnitude) for a, b in zip(t["w13"], t["w2"], strict=True)]


def _reduce_reference(t):
    return {"out": sum(_partials(t))}


def _reduce_scale(t, expected):
    """Each rank rounds its experts' results and every add of the reduction rounds: the error follows the sum over
    ranks and experts of |weighted result|."""
    return {"out": sum(_partials(t, magnitude=True))}


def routing(tokens: int, experts: int, k: int, gen):
    """(ids [T, K] int32, weights [T, K] fp32): distinct experts per token from a skewed popularity over the experts
    left after at least one cold one is removed, sometimes with one hot expert in every token's choice."""
    import torch

    cold = int(torch.randint(1, experts - k + 1, (), generator=gen)) if experts > k else 0
    warm = torch.randperm(experts, generator=gen)[: experts - cold]
    popularity = (2.0 * torch.randn((warm.numel(),), generator=gen)).exp()
    picks = torch.multinomial(popularity.expand(tokens, -1).contiguous(), k, replacement=False, generator=gen)
    if int(torch.randint(0, HOT_ODDS, (), generator=gen)) == 0:
        hot = int(torch.randint(0, warm.numel(), (), generator=gen))
        absent = ~(picks == hot).any(dim=1)
        picks[absent, int(torch.randint(0, k, (), generator=gen))] = hot
    weights = 0.05 + 0.95 * torch.rand((tokens, k), generator=gen)
    if float(torch.rand((), generator=gen)) < 0.5:
        weights = weights / weights.sum(dim=1, keepdim=True)
    return warm[picks].to(torch.int32), weights.float()


def hidden(tokens: int, width: int, gen):
    """[T, H] fp32 hidden states: randn rows at a log-uniform scale, about one row in eight zero (never all)."""
    import math

    import torch

    lo, hi = (math.log(s) for s in ROW_SCALES)
    x = torch.randn((tokens, width), generator=gen) * (lo + (hi - lo) * torch.rand((tokens, 1), generator=gen)).exp()
    zero = torch.randint(0, ZERO_ROW_ODDS, (tokens,), generator=gen) == 0
    zero[int(torch.randint(0, tokens, (), generator=gen))] = False
    x[zero] = 0.0
    return x


def _inputs(dims, dtype, gen):
    import torch

    t, h, i, e, k = dims["T"], dims["H"], dims["I"], dims["E"], dims["K"]
    ids, weights = routing(t, e, k, gen)
    return {
        "x": hidden(t, h, gen).to(dtype),
        "topk_ids": ids,
        "topk_weights": weights,
        "w13": (torch.randn((e, 2 * i, h), generator=gen) * h**-0.5).to(dtype),
        "w2": (torch.randn((e, h, i), generator=gen) * i**-0.5).to(dtype),
    }


def _traffic(reached: int, dims, esize: int) -> int:
    """The weights of the `reached` experts, x read and out written, the routing."""
    return (reached * 3 * dims["H"] * dims["I"] + 2 * dims["T"] * dims["H"]) * esize + 8 * dims["T"] * dims["K"]


def _bytes(dims, esize: int) -> int:
    """At most: every expert a call can reach (at most T*K of them)."""
    return _traffic(min(dims["E"], dims["T"] * dims["K"]), dims, esize)


def _bytes_read(t, esize: int) -> int:
    """A call's own: only the experts its router chose (cold ones and a hot one leave many unread)."""
    (tokens, k), (_, h, i) = t["topk_ids"].shape, t["w2"].shape[-3:]
    return _traffic(int(t["topk_ids"].unique().numel()), {"T": tokens, "H": h, "I": i, "K": k}, esize)


ARGS = (
    ArgSpec("x", Role.INPUT, shape=("T", "H")),
    ArgSpec("topk_ids", Role.INPUT, dtype="i32", shape=("T", "K")),
    ArgSpec("topk_weights", Role.INPUT, dtype="fp32", shape=("T", "K")),
    ArgSpec("w13", Role.INPUT, shape=("E", "2*I", "H")),
    ArgSpec("w2", Role.INPUT, shape=("E", "H", "I")),
    ArgSpec("out", Role.OUTPUT, shape=("T", "H")),
)


def _shape(t, h, i, e, k, cpu=False):
    return Shape({"T": t, "H": h, "I": i, "E": e, "K": k}, cpu=cpu)


CPU_SHAPES = (
    _shape(1, 128, 64, 4, 2, cpu=True),
    _shape(8, 256, 64, 8, 2, cpu=True),
    _shape(5, 192, 48, 6, 1, cpu=True),
    _shape(16, 64, 32, 64, 8, cpu=True),
)
"""Small enough for the Triton interpreter (every tensor within verify's CPU budget), with a top-1 router,
non-power-of-two widths and more experts than tokens."""

MOE_FUSED_EXPERTS = SlotSpec(
    name="moe.fused_experts",
    summary="Routed SwiGLU experts: out[t] = sum_k topk_weights[t,k] * w2[e] @ (silu(gate_e x_t) * up_e x_t), "
    "e = topk_ids[t,k], w13[e] = [gate; up]",
    args=ARGS,
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(
        *CPU_SHAPES,
        _shape(32, 4096, 1792, 8, 2),
        _shape(64, 2048, 1024, 8, 2),
        _shape(256, 1024, 256, 64, 8),
        _shape(333, 1536, 384, 16, 4),
    ),
    bench_shapes=(
        _shape(4, 128, 64, 4, 2, cpu=True),
        *(_shape(t, 4096, 1792, 8, 2) for t in (1, 8, 32, 128, 512, 2048)),  # the mixtral-8b preset's layer
        *(_shape(t, 2048, 1024, 64, 8) for t in (1, 32, 256, 2048)),
        *(_shape(t, 2048, 768, 128, 8) for t in (1, 32, 256, 2048)),
    ),
    reference=_reference,
    make_inputs=_inputs,
    bytes_moved=_bytes,
    bytes_read=_bytes_read,
    flops=lambda dims: 6 * dims["T"] * dims["K"] * dims["H"] * dims["I"],
    rounding_scale=_scale,
)

MOE_FUSED_EXPERTS_REDUCE = SlotSpec(
    name="moe.fused_experts_reduce",
    summary="Tensor-parallel routed experts with their all-reduce: out = sum over ranks of moe.fused_experts with "
    "the rank's own w13 and w2 shards",
    args=(*ARGS, ArgSpec("group", Role.GROUP)),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(*CPU_SHAPES, _shape(32, 4096, 896, 8, 2), _shape(256, 1024, 128, 64, 8)),
    bench_shapes=(_shape(4, 128, 64, 4, 2, cpu=True), _shape(32, 4096, 896, 8, 2)),
    reference=_reduce_reference,
    make_inputs=_inputs,
    bytes_moved=_bytes,  # one rank's own traffic
    bytes_read=_bytes_read,
    flops=lambda dims: 6 * dims["T"] * dims["K"] * dims["H"] * dims["I"],
    strided_outputs=False,
    world_size=2,
    replicated=("x", "topk_ids", "topk_weights"),
    rounding_scale=_reduce_scale,
)

__all__ = ["MOE_FUSED_EXPERTS", "MOE_FUSED_EXPERTS_REDUCE", "experts", "routing"]

SPECS = (
    MOE_FUSED_EXPERTS,
    MOE_FUSED_EXPERTS_REDUCE,
)
"""The slots this module defines: the registry finds them here."""
