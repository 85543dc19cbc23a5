"""The typed description of a slot: its arguments, trusted fp32 reference, shapes and tolerances."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

import torch

DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class Role(str, Enum):
    """How the verifier treats an argument: inputs are checked for mutation, outputs are poisoned and compared."""

    INPUT = "input"
    OUTPUT = "output"
    SCALAR = "scalar"
    GROUP = "group"


@dataclass(frozen=True)
class ArgSpec:
    """One positional argument of the slot's write-into-output ABI."""

    name: str
    role: Role
    dtype: str = "T"
    """"T" follows the op's dtype; otherwise a fixed dtype name from DTYPES."""
    shape: tuple[str, ...] = ()
    """Symbolic dims, each a product of dim names and integers, e.g. ("T", "2*D")."""
    default: float | None = None
    """Value passed for a scalar argument."""


@dataclass(frozen=True)
class Tolerance:
    """Every element must satisfy |actual - expected| <= atol + rtol * |expected|."""

    atol: float
    rtol: float


TOLERANCES: dict[str, Tolerance] = {
    "bf16": Tolerance(2e-2, 2e-2),
    "fp16": Tolerance(1e-2, 1e-2),
    "fp32": Tolerance(1e-5, 1e-5),
}


@dataclass(frozen=True)
class Shape:
    """Concrete sizes for the slot's symbolic dims; `cpu=False` keeps huge shapes off the CPU interpreter."""

    dims: Mapping[str, int]
    cpu: bool = True

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.dims.items())


Tensors = Mapping[str, "torch.Tensor | float"]


@dataclass(frozen=True)
class SlotSpec:
    """A validator-owned replacement boundary in the engine; candidates must match `reference` within tolerance."""

    name: str
    summary: str
    args: tuple[ArgSpec, ...]
    dtypes: tuple[str, ...]
    count_dim: str
    """The token-count dim: jittered during verification and bounded by a variant's max_num_tokens."""
    shapes: tuple[Shape, ...]
    """Verification shapes (the count dim is jittered around these)."""
    bench_shapes: tuple[Shape, ...]
    reference: Callable[[Tensors], dict[str, torch.Tensor]]
    """Trusted fp32 computation of every output from the inputs and scalars."""
    make_inputs: Callable[[Mapping[str, int], torch.dtype, torch.Generator], dict[str, torch.Tensor]]
    """Fresh random inputs (CPU tensors) for the given dims and dtype."""
    bytes_moved: Callable[[Mapping[str, int], int], int]
    """Bytes that must cross DRAM for one call, given dims and the element size: the memory roofline numerator."""
    flops: Callable[[Mapping[str, int]], int]
    strided_outputs: bool = True
    """Outputs may arrive with a padded row stride; candidates must honor it."""
    world_size: int = 1
    """Ranks the slot needs; collectives need more than one."""
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: TOLERANCES)

    def arg(self, name: str) -> ArgSpec:
        return next(a for a in self.args if a.name == name)

    def of_role(self, role: Role) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.role is role)

    def shape_of(self, arg: ArgSpec, dims: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(eval_dim(expr, dims) for expr in arg.shape)

    def dtype_of(self, arg: ArgSpec, op_dtype: str) -> torch.dtype:
        return DTYPES[op_dtype if arg.dtype == "T" else arg.dtype]

    def signature(self) -> str:
        """Human form of the ABI, e.g. "norm.rmsnorm(x[T,H], weight[H], eps=1e-06) -> out[T,H]"."""
        ins, outs = [], []
        for a in self.args:
            if a.role is Role.SCALAR:
                ins.append(f"{a.name}={a.default:g}")
            elif a.role is Role.GROUP:
                ins.append(f"{a.name}:ProcessGroup")
            else:
                (outs if a.role is Role.OUTPUT else ins).append(f"{a.name}[{','.join(a.shape)}]")
        return f"{self.name}({', '.join(ins)}) -> {', '.join(outs)}"

def eval_dim(expr: str, dims: Mapping[str, int]) -> int:
    """Evaluates a product like "2*D" without eval(); unknown names are a programming error in a slot spec."""
    return math.prod(int(f) if f.isdigit() else dims[f] for f in (p.strip() for p in expr.split("*")))
