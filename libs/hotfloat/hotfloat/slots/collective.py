"""collective.all_reduce: out = sum of x over every rank of the validator's process group, reduced in fp32.

Inputs are drawn per rank (each rank its own seeded generator); the reference sees `x` as the stack of all ranks'
inputs, shape (world, T, H), and is computed by the validator, never inside a rank."""

from __future__ import annotations

from collections.abc import Mapping

from . import families
from .spec import ArgSpec, DimRange, Role, Shape, SlotSpec

MAX_WORLD = 64
"""The largest world a collective is verified on (the CLI's bound)."""


def stack_ranks(slot: SlotSpec, ranks: list[Mapping]) -> dict:
    """What a collective's reference sees of one call made on every rank: each rank's own inputs stacked along a new
    first dim (rank r at index r), the replicated inputs, the scalars and the group once (every rank got the same)."""
    import torch

    own = {a.name for a in slot.of_role(Role.INPUT)} - set(slot.replicated)
    return {k: torch.stack([r[k] for r in ranks]) if k in own else v for k, v in ranks[0].items()}


def _reference(t):
    return {"out": t["x"].float().sum(dim=0)}


def _inputs(dims, dtype, gen):
    limit = families.bound(dtype)
    share = None if limit is None else limit / MAX_WORLD  # the sum over every rank must stay finite in fp16
    return {"x": families.activations(dims["T"], dims["H"], gen, bound=share).to(dtype)}


ALL_REDUCE = SlotSpec(
    name="collective.all_reduce",
    summary="Tensor-parallel all-reduce: out = sum over ranks of x",
    args=(
        ArgSpec("x", Role.INPUT, shape=("T", "H")),
        ArgSpec("out", Role.OUTPUT, shape=("T", "H")),
        ArgSpec("group", Role.GROUP),
    ),
    dtypes=("bf16", "fp16", "fp32"),
    count_dim="T",
    shapes=(
        Shape({"T": 1, "H": 4096}),
        Shape({"T": 8, "H": 4096}),
        Shape({"T": 128, "H": 2880}),
        Shape({"T": 333, "H": 1536}),
        Shape({"T": 4096, "H": 4096}, cpu=False),
    ),
    bench_shapes=tuple(Shape({"T": t, "H": 4096}, cpu=t <= 128) for t in (1, 8, 32, 128, 1024, 4096)),
    reference=_reference,
    make_inputs=_inputs,
    bytes_moved=lambda dims, esize: 2 * dims["T"] * dims["H"] * esize,
    flops=lambda dims: dims["T"] * dims["H"],
    strided_outputs=False,
    world_size=2,
    ranges={"T": DimRange(1, 8192), "H": DimRange(128, 16384, 16)},
    rounding_scale=lambda t, expected: {"out": t["x"].float().abs().sum(0)},  # every add of the reduction rounds
)

SPECS = (ALL_REDUCE,)
"""The slots this module defines: the registry finds them here."""
