"""activation.gelu_and_mul: the GeGLU gate, out = gelu_tanh(x[..., :D]) * x[..., D:] (a slot added in a test: the
whole of what hotfloat needs to know about it)."""

from . import families
from .spec import ArgSpec, AuditSite, DimRange, Role, Shape, SlotSpec


def _reference(t):
    import torch

    x = t["x"].float()
    d = x.shape[-1] // 2
    return {"out": torch.nn.functional.gelu(x[..., :d], approximate="tanh") * x[..., d:]}


def _inputs(dims, dtype, gen):
    x = families.activations(dims["T"], 2 * dims["D"], gen, bound=families.bound(dtype, factors=2))
    return {"x": x.to(dtype)}


GELU_AND_MUL = SlotSpec(
    name="activation.gelu_and_mul",
    summary="GeGLU gate: out = gelu_tanh(x[..., :D]) * x[..., D:]",
    args=(ArgSpec("x", Role.INPUT, shape=("T", "2*D")), ArgSpec("out", Role.OUTPUT, shape=("T", "D"))),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(Shape({"T": 1, "D": 512}), Shape({"T": 8, "D": 512}), Shape({"T": 333, "D": 1440})),
    bench_shapes=(Shape({"T": 8, "D": 4096}),),
    reference=_reference,
    make_inputs=_inputs,
    bytes_moved=lambda dims, esize: 3 * dims["T"] * dims["D"] * esize,
    flops=lambda dims: 9 * dims["T"] * dims["D"],
    ranges={"T": DimRange(1, 8192), "D": DimRange(64, 16384, 16)},
    audit=AuditSite("rowwise", {"T": 4, "D": 8}),
)

SPECS = (GELU_AND_MUL,)
