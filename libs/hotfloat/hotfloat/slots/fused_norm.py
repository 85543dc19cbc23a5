"""norm.fused_add_rmsnorm: residual_out = x + residual, out = rmsnorm(residual_out) * weight, in one pass.

The engine calls it twice per decoder layer (SGLang's `RMSNorm.forward_cuda(x, residual)`), so at decode it is a
launch- and latency-bound hot spot that the unfused torch path pays for with several passes over the hidden state.

Outputs are returned, not written in place. SGLang's sgl-kernel overwrites x and residual, but its callers only use
the pair that forward returns, so the seam can hand back fresh tensors; and keeping x and residual read-only keeps
the slot on the framework's one contract (inputs are checked unmutated, every output starts poisoned and must be
fully written), so a kernel that skips residual_out is caught as "left unwritten" rather than by luck of the values.

Tolerances are the shared per-dtype table, and they hold for both legitimate roundings: the reference keeps the sum
in fp32, while a kernel stores residual_out in the op dtype (one rounding, <= 2^-9 relative in bf16, 2^-12 in
fp16) and may normalise either the fp32 sum (sgl-kernel, FlashInfer) or the rounded residual (torch's unfused add
then rms_norm), which moves out by at most about twice that rounding: 0.4% in bf16 and 0.05% in fp16, well inside
rtol 2e-2 and 1e-2. In fp32 both paths agree to the reduction order (~1e-7 relative at H = 8192), inside 1e-5.
A kernel that forgets either addend, or normalises the residual it was given, is off by O(1).
"""

from .norm import EPS, scalars
from . import families
from .spec import ArgSpec, AuditSite, DimRange, Role, Shape, SlotSpec


def _reference(t):
    import torch

    s = t["x"].float() + t["residual"].float()
    out = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + float(t["eps"])) * t["weight"].float()
    return {"out": out, "residual_out": s}


def _inputs(dims, dtype, gen):
    limit = families.bound(dtype)
    half = None if limit is None else limit / 2  # the sum must stay finite in fp16 too
    return {
        "x": families.activations(dims["T"], dims["H"], gen, bound=half).to(dtype),
        "residual": families.activations(dims["T"], dims["H"], gen, bound=half).to(dtype),
        "weight": families.norm_weight(dims["H"], gen).to(dtype),
    }


FUSED_ADD_RMSNORM = SlotSpec(
    name="norm.fused_add_rmsnorm",
    summary="residual_out = x + residual; out = residual_out * rsqrt(mean(residual_out^2) + eps) * weight",
    args=(
        ArgSpec("x", Role.INPUT, shape=("T", "H")),
        ArgSpec("residual", Role.INPUT, shape=("T", "H")),
        ArgSpec("weight", Role.INPUT, shape=("H",)),
        ArgSpec("out", Role.OUTPUT, shape=("T", "H")),
        ArgSpec("residual_out", Role.OUTPUT, shape=("T", "H")),
        ArgSpec("eps", Role.SCALAR, dtype="fp32", default=EPS),
    ),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(
        Shape({"T": 1, "H": 896}),
        Shape({"T": 8, "H": 4096}),
        Shape({"T": 32, "H": 1536}),
        Shape({"T": 128, "H": 8192}),
        Shape({"T": 256, "H": 896}),
        Shape({"T": 333, "H": 1536}),
        Shape({"T": 2048, "H": 4096}, cpu=False),
        Shape({"T": 1024, "H": 8192}, cpu=False),
    ),
    bench_shapes=tuple(
        Shape({"T": t, "H": h}, cpu=t * h <= 128 * 4096) for h in (896, 1536, 4096, 8192) for t in (1, 8, 32, 128, 256)
    )
    + (Shape({"T": 4096, "H": 4096}, cpu=False), Shape({"T": 8192, "H": 8192}, cpu=False)),
    reference=_reference,
    make_inputs=_inputs,
    make_scalars=scalars,
    bytes_moved=lambda dims, esize: (4 * dims["T"] * dims["H"] + dims["H"]) * esize,
    flops=lambda dims: 5 * dims["T"] * dims["H"],
    ranges={"T": DimRange(1, 8192), "H": DimRange(128, 16384, 16)},
    audit=AuditSite("rowwise", {"T": 4, "H": 8}),
)

SPECS = (FUSED_ADD_RMSNORM,)
"""The slots this module defines: the registry finds them here."""
