"""collective.ar_residual_rmsnorm: a tensor-parallel layer's epilogue in one call, residual_out = (sum over ranks of x)
+ residual and out = rmsnorm(residual_out) * weight.

Each rank holds its partial x of the attention or MLP output and the same residual stream and norm weight; SGLang's
fused epilogue (FlashInfer's allreduce fusion, hooked by hotfloat_sglang.seams.ar_rmsnorm) reduces, adds and normalises in
one kernel, where the unfused path pays an all-reduce and a fused_add_rmsnorm. The call order is Cacheon's (eps
before the outputs), so its bundles for this slot import unchanged.

Verification draws x per rank and gives every rank rank 0's residual and weight (`replicated`); the reference sees x
stacked over ranks and keeps the sum in fp32. A correct kernel may reduce in the op dtype (NCCL and gloo store every
partial sum of a bf16 reduction in bf16), so every partial sum rounds and residual_out's error follows its addends, A = sum_r |x_r| + |residual|, not
|residual_out| (cancellation can make that small), as in collective.all_reduce. out inherits that error through the
normalisation, A * rsqrt(mean(s^2) + eps) * |weight|, beside its own rounding of |out|: rtol applies to the sum of
the two. A kernel that skips the reduction, the residual or the normalisation is off by O(1) of that scale wherever
the missing term is not negligible, and with each rank's row scales spread over six decades every call has such rows.
"""

from . import families
from .collective import MAX_WORLD
from .norm import EPS, scalars
from .spec import ArgSpec, DimRange, Role, Shape, SlotSpec


def _inv_rms(s, eps):
    import torch

    return torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + float(eps))


def _reference(t):
    s = t["x"].float().sum(0) + t["residual"].float()
    return {"out": s * _inv_rms(s, t["eps"]) * t["weight"].float(), "residual_out": s}


def _scales(t, expected):
    addends = t["x"].float().abs().sum(0) + t["residual"].float().abs()
    carried = addends * _inv_rms(expected["residual_out"], t["eps"]) * t["weight"].float().abs()
    return {"out": expected["out"].abs() + carried, "residual_out": addends}


def _inputs(dims, dtype, gen):
    limit = families.bound(dtype)
    share = None if limit is None else limit / MAX_WORLD  # every rank's x and the residual sum finite in fp16
    return {
        "x": families.activations(dims["T"], dims["H"], gen, bound=share).to(dtype),
        "residual": families.activations(dims["T"], dims["H"], gen, bound=share).to(dtype),
        "weight": families.norm_weight(dims["H"], gen).to(dtype),
    }


AR_RESIDUAL_RMSNORM = SlotSpec(
    name="collective.ar_residual_rmsnorm",
    summary=(
        "Tensor-parallel all-reduce, residual add and RMSNorm: residual_out = sum over ranks of x + residual; "
        "out = residual_out * rsqrt(mean(residual_out^2) + eps) * weight"
    ),
    args=(
        ArgSpec("x", Role.INPUT, shape=("T", "H")),
        ArgSpec("residual", Role.INPUT, shape=("T", "H")),
        ArgSpec("weight", Role.INPUT, shape=("H",)),
        ArgSpec("eps", Role.SCALAR, dtype="fp32", default=EPS),
        ArgSpec("out", Role.OUTPUT, shape=("T", "H")),
        ArgSpec("residual_out", Role.OUTPUT, shape=("T", "H")),
        ArgSpec("group", Role.GROUP),
    ),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(
        Shape({"T": 1, "H": 4096}),
        Shape({"T": 8, "H": 6144}),
        Shape({"T": 48, "H": 2880}),
        Shape({"T": 160, "H": 896}),
        Shape({"T": 32, "H": 8192}, cpu=False),  # the rest only on GPUs: a rank's Triton runs interpreted on CPU
        Shape({"T": 128, "H": 2880}, cpu=False),
        Shape({"T": 256, "H": 4096}, cpu=False),
        Shape({"T": 333, "H": 1536}, cpu=False),
        Shape({"T": 2048, "H": 4096}, cpu=False),
    ),
    bench_shapes=tuple(
        Shape({"T": t, "H": h}, cpu=t * h <= 128 * 4096) for h in (4096, 8192) for t in (1, 8, 32, 128, 512)
    ),
    reference=_reference,
    make_inputs=_inputs,
    make_scalars=scalars,
    bytes_moved=lambda dims, esize: (4 * dims["T"] * dims["H"] + dims["H"]) * esize,  # one rank's own traffic
    flops=lambda dims: 6 * dims["T"] * dims["H"],
    strided_outputs=False,
    world_size=2,
    ranges={"T": DimRange(1, 8192), "H": DimRange(128, 16384, 16)},
    replicated=("residual", "weight"),
    rounding_scale=_scales,
)

SPECS = (AR_RESIDUAL_RMSNORM,)
"""The slots this module defines: the registry finds them here."""
