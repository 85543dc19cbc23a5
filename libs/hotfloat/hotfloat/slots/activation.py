"""activation.silu_and_mul: the gated MLP activation, out = silu(x[:, :D]) * x[:, D:]."""

from . import families
from .spec import ArgSpec, AuditSite, DimRange, Role, Shape, SlotSpec


def _reference(t):
    import torch

    x = t["x"].float()
    d = x.shape[-1] // 2
    return {"out": torch.nn.functional.silu(x[..., :d]) * x[..., d:]}


def _inputs(dims, dtype, gen):
    x = families.activations(dims["T"], 2 * dims["D"], gen, bound=families.bound(dtype, factors=2))
    return {"x": x.to(dtype)}


SILU_AND_MUL = SlotSpec(
    name="activation.silu_and_mul",
    summary="SwiGLU gate: out = silu(x[..., :D]) * x[..., D:]",
    args=(
        ArgSpec("x", Role.INPUT, shape=("T", "2*D")),
        ArgSpec("out", Role.OUTPUT, shape=("T", "D")),
    ),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(
        Shape({"T": 1, "D": 512}),
        Shape({"T": 8, "D": 512}),
        Shape({"T": 128, "D": 2048}),
        Shape({"T": 333, "D": 1440}),
        Shape({"T": 1024, "D": 1024}),
        Shape({"T": 4096, "D": 2048}, cpu=False),
    ),
    bench_shapes=tuple(
        Shape({"T": t, "D": d}, cpu=t * d <= 128 * 4096)
        for t, d in ((1, 4096), (8, 4096), (32, 4096), (128, 4096), (1024, 4096), (4096, 8192), (8192, 8192))
    ),
    reference=_reference,
    make_inputs=_inputs,
    bytes_moved=lambda dims, esize: 3 * dims["T"] * dims["D"] * esize,
    flops=lambda dims: 5 * dims["T"] * dims["D"],
    ranges={"T": DimRange(1, 8192), "D": DimRange(64, 16384, 16)},
    audit=AuditSite("rowwise", {"T": 4, "D": 8}),
)

SPECS = (SILU_AND_MUL,)
"""The slots this module defines: the registry finds them here."""
