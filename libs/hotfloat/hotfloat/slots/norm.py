"""norm.rmsnorm: out = x * rsqrt(mean(x^2) + eps) * weight, reduced in fp32 over the hidden dim."""

import math

from . import families
from .spec import ArgSpec, AuditSite, DimRange, Role, Shape, SlotSpec

EPS = 1e-6
"""The default a caller passes (Qwen, Llama 3); verification draws its own per case (`scalars`)."""
EPS_RANGE = (1e-7, 1e-4)
"""Where drawn eps values lie, log-uniform: models use 1e-5 (Llama 2, Mistral), 1e-6 and smaller."""


def _reference(t):
    import torch

    x = t["x"].float()
    w = t["weight"].float()
    return {"out": x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + float(t["eps"])) * w}


def scalars(dims, gen):
    """eps, drawn per case: the seam passes the model's own, so a kernel that hard-codes 1e-6 must fail here too."""
    import torch

    lo, hi = (math.log(v) for v in EPS_RANGE)
    return {"eps": math.exp(lo + (hi - lo) * float(torch.rand((), generator=gen)))}


def _inputs(dims, dtype, gen):
    x = families.activations(dims["T"], dims["H"], gen, bound=families.bound(dtype)).to(dtype)
    return {"x": x, "weight": families.norm_weight(dims["H"], gen).to(dtype)}


RMSNORM = SlotSpec(
    name="norm.rmsnorm",
    summary="RMSNorm: out = x * rsqrt(mean(x^2) + eps) * weight",
    args=(
        ArgSpec("x", Role.INPUT, shape=("T", "H")),
        ArgSpec("weight", Role.INPUT, shape=("H",)),
        ArgSpec("out", Role.OUTPUT, shape=("T", "H")),
        ArgSpec("eps", Role.SCALAR, dtype="fp32", default=EPS),
    ),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(
        Shape({"T": 1, "H": 2880}),
        Shape({"T": 8, "H": 2880}),
        Shape({"T": 128, "H": 2880}),
        Shape({"T": 64, "H": 6144}),
        Shape({"T": 333, "H": 1536}),
        Shape({"T": 4096, "H": 4096}, cpu=False),
    ),
    bench_shapes=tuple(
        Shape({"T": t, "H": h}, cpu=t * h <= 128 * 4096)
        for t, h in ((1, 4096), (8, 4096), (32, 4096), (128, 4096), (1024, 4096), (4096, 8192), (8192, 8192))
    ),
    reference=_reference,
    make_inputs=_inputs,
    make_scalars=scalars,
    bytes_moved=lambda dims, esize: (2 * dims["T"] * dims["H"] + dims["H"]) * esize,
    flops=lambda dims: 4 * dims["T"] * dims["H"],
    ranges={"T": DimRange(1, 8192), "H": DimRange(128, 16384, 16)},
    audit=AuditSite("rowwise", {"T": 4, "H": 8}),
)

SPECS = (RMSNORM,)
"""The slots this module defines: the registry finds them here."""
