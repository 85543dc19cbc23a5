"""The typed description of a slot: its arguments, trusted fp32 reference, shapes and tolerances."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


class _Dtypes(Mapping[str, "torch.dtype"]):
    """Dtype name -> torch dtype, resolved on use: reading slot contracts (the CLI's `slots`, `hash`) needs no torch."""

    _NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}

    def __getitem__(self, name: str) -> torch.dtype:
        import torch

        return getattr(torch, self._NAMES[name])

    def __contains__(self, name: object) -> bool:
        return name in self._NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)


DTYPES: Mapping[str, torch.dtype] = _Dtypes()


class _IndexDtypes(_Dtypes):
    """Fixed dtypes of index arguments (page tables, offsets): an argument's dtype, never an op's."""

    _NAMES = {"i32": "int32", "i64": "int64"}


INDEX_DTYPES: Mapping[str, torch.dtype] = _IndexDtypes()


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
    """"T" follows the op's dtype; otherwise a fixed dtype name from DTYPES or INDEX_DTYPES."""
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


@dataclass(frozen=True)
class DimRange:
    """The sizes a dim takes in real engines: lo..hi in steps of `multiple` (vectorised kernels may rely on it)."""

    lo: int
    hi: int
    multiple: int = 1


Tensors = Mapping[str, "torch.Tensor | float"]


@dataclass(frozen=True)
class AuditSite:
    """How the in-engine audit keeps a slot's calls: its entry layout (`hotfloat.audit.layout`: rowwise, prefill or
    decode) and a tiny call the taps are compiled with before a bundle is imported."""

    kind: str
    warm: Mapping[str, int]


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
    make_scalars: Callable[[Mapping[str, int], torch.Generator], dict[str, float]] | None = None
    """Scalars drawn per verification case (e.g. attention's scale), fixed over the case's calls because a captured
    CUDA graph bakes them in; None passes each scalar's default."""
    ranges: Mapping[str, DimRange] = field(default_factory=dict)
    """Every size the slot accepts per dim, for shapes drawn from the secret; a slot without ranges draws from its
    published shapes instead."""
    replicated: tuple[str, ...] = ()
    """A collective's inputs that every rank holds alike (the residual stream and norm weight under tensor
    parallelism); its other inputs are each rank's own, stacked along a new first dim for `reference`."""
    bytes_read: Callable[[Tensors, int], int] | None = None
    """Where the inputs decide the traffic (MoE reads only the experts its router chose), the bytes of one call given
    its inputs and the element size; the bench's roofline uses it, `bytes_moved` (then an upper bound) sizes buffers."""
    rounding_scale: Callable[[Tensors, dict[str, torch.Tensor]], dict[str, torch.Tensor]] | None = None
    """Per output, the magnitude rtol applies to where a correct kernel's rounding follows the addends rather than the
    result (a sum over ranks or over experts), from the reference's inputs and outputs; None: |expected|."""
    audit: AuditSite | None = None
    """Where the in-engine audit sees the slot's calls; None: a routed call is one no audit can see (an error)."""

    def expect(self, inputs: Tensors) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The reference's outputs and, per output, the magnitude rtol applies to: verify, the collective verifier,
        the native admission check and the bench all judge with this one pair, so none refuses what another admits."""
        expected = self.reference(inputs)
        scales = self.rounding_scale(inputs, expected) if self.rounding_scale else {}
        return expected, {name: scales.get(name, want.abs()) for name, want in expected.items()}

    def arg(self, name: str) -> ArgSpec:
        return next(a for a in self.args if a.name == name)

    def of_role(self, role: Role) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.role is role)

    def shape_of(self, arg: ArgSpec, dims: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(eval_dim(expr, dims) for expr in arg.shape)

    def dtype_of(self, arg: ArgSpec, op_dtype: str) -> torch.dtype:
        if arg.dtype == "T":
            return DTYPES[op_dtype]
        return (INDEX_DTYPES if arg.dtype in INDEX_DTYPES else DTYPES)[arg.dtype]

    def signature(self) -> str:
        """The call exactly as the entry receives it, e.g. "norm.rmsnorm(x[T,H], weight[H], out[T,H], eps=1e-06)"."""
        parts = []
        for a in self.args:
            if a.role is Role.SCALAR:
                parts.append(f"{a.name}={a.default:g}")
            elif a.role is Role.GROUP:
                parts.append(f"{a.name}:ProcessGroup")
            else:
                parts.append(f"{a.name}[{','.join(a.shape)}]")
        return f"{self.name}({', '.join(parts)})"


def eval_dim(expr: str, dims: Mapping[str, int]) -> int:
    """Evaluates a sum of products like "2*D" or "B+1" without eval(); unknown names are a programming error in a
    slot spec."""
    return sum(
        math.prod(int(f) if f.isdigit() else dims[f] for f in (p.strip() for p in term.split("*")))
        for term in expr.split("+")
    )
