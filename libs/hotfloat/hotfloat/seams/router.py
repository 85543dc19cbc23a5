"""The seam router: per call, the armed bundle's kernel inside its declared domain, the caller's stock code outside.

Engine-agnostic: an engine adapter (the SGLang plugin, the transformers reference engine) hands each slot call here
with the slot's arguments and a `stock` callable; the router allocates the outputs, calls the bundle's entry with the
slot's positional write-into-output ABI, and counts what it did so a test can prove the bundle really ran.

A router built as a *twin* of a candidate (`twin_of`) never imports the candidate's code: it reads only the
manifest, and every call inside the candidate's declared domains gets its outputs moved one unit in the last place
towards zero, after whatever would have served it. That engine's numerics differ from the baseline's by a known,
legitimate amount, which is what qualification's correctness gate measures a candidate against.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..bundle import Bundle, Op, load_bundle
from ..errors import HotfloatError
from ..slots import SLOTS, Role, SlotSpec, get_slot
from .domain import bind_dims, in_domain
from .errors import SeamLoadError
from .loader import load_entries, materialize

ENV_BUNDLE = "HOTFLOAT_ARMED_BUNDLE"
"""Path of the bundle directory to arm; unset or empty means null-armed (every call goes stock)."""
ENV_IDENTITY = "HOTFLOAT_ARMED_IDENTITY"
"""Optional expected bundle identity; a different bundle at the path is a load failure."""
ENV_TWIN_OF = "HOTFLOAT_TWIN_OF"
"""Path of a candidate bundle whose domains this engine nudges (a twin); its code is never imported."""
ENV_TWIN_IDENTITY = "HOTFLOAT_TWIN_IDENTITY"
"""Optional expected identity of the twin's candidate bundle."""


@dataclass
class SeamCount:
    """How many calls of one slot went to the bundle and how many to the stock implementation."""

    routed: int = 0
    stock: int = 0


class SeamRouter:
    """Routes slot calls between an armed bundle and stock implementations; null-armed when built without a bundle."""

    def __init__(self, bundle: Bundle | None = None, *, workdir: str | None = None, twin_of: Bundle | None = None):
        self.bundle, self.twin_of = bundle, twin_of
        self._armed: dict[str, list[Op]] = {name: [] for name in SLOTS}
        self._nudged: dict[str, list[Op]] = {name: [] for name in SLOTS}
        self._entries: dict[str, Callable] = {}
        self._counts = {name: SeamCount() for name in SLOTS}
        self._lock = threading.Lock()
        if bundle is not None:
            self._entries = load_entries(bundle, materialize(bundle, workdir))
            for op in bundle.ops:
                self._armed[op.entry.slot].append(op)
        for op in twin_of.ops if twin_of is not None else ():
            self._nudged[op.entry.slot].append(op)

    @property
    def slots(self) -> set[str]:
        """Slots this router does anything with: those the armed bundle offers and those a twin nudges."""
        return {name for name in SLOTS if self._armed[name] or self._nudged[name]}

    @property
    def identity(self) -> str | None:
        """The armed bundle's identity, or None when null-armed."""
        return self.bundle.identity if self.bundle else None

    def call(self, slot: str, stock: Callable[..., torch.Tensor], *args, **kwargs):
        """Runs one call of `slot` with the slot's inputs and scalars (in ABI order); returns its output, or a tuple
        of its outputs in ABI order when the slot has several.

        `stock(*args, **kwargs)` is used, untouched, whenever no armed op's domain covers the call. A twin counts
        the calls it nudges as routed.
        """
        spec = get_slot(slot)
        values = _bind_args(spec, args, kwargs)
        found = self._site(spec, values, self._armed[slot])
        nudge = self._site(spec, values, self._nudged[slot]) is not None
        self._count(slot, routed=found is not None or nudge)
        served = stock(*args, **kwargs) if found is None else self._run(spec, values, found)
        if not nudge:
            return served
        return tuple(_toward_zero(o) for o in served) if isinstance(served, tuple) else _toward_zero(served)

    def _run(self, spec: SlotSpec, values: dict, found: tuple):
        """Calls the armed op `found` (from `_site`) with freshly allocated outputs."""
        op, lead, tensors, dims = found
        fn = self._entries[op.key]
        outs = {}
        for a in spec.of_role(Role.OUTPUT):
            ref = tensors[spec.of_role(Role.INPUT)[0].name]
            outs[a.name] = torch.empty(spec.shape_of(a, dims), dtype=ref.dtype, device=ref.device)
        positional = [outs[a.name] if a.role is Role.OUTPUT else tensors.get(a.name, values.get(a.name)) for a in spec.args]
        fn(*positional)
        shaped = tuple(o.reshape(*lead, *o.shape[1:]) for o in outs.values())
        return shaped[0] if len(shaped) == 1 else shaped

    def silu_and_mul(self, x: torch.Tensor, *, stock: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """activation.silu_and_mul of x[..., 2d] -> [..., d]; `stock(x)` outside the armed domain."""
        return self.call("activation.silu_and_mul", stock, x)

    def rmsnorm(self, x: torch.Tensor, weight: torch.Tensor, eps: float, *, stock: Callable[..., torch.Tensor]) -> torch.Tensor:
        """norm.rmsnorm of x[..., h] with weight[h] and eps -> [..., h]; `stock(x, weight, eps)` outside the domain."""
        return self.call("norm.rmsnorm", stock, x, weight, eps)

    def fused_add_rmsnorm(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float, *,
                          stock: Callable[..., tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        """norm.fused_add_rmsnorm of x[..., h] and residual[..., h] -> (out, residual_out), both fresh tensors (x and
        residual are left as they were); `stock(x, residual, weight, eps)` outside the domain."""
        return self.call("norm.fused_add_rmsnorm", stock, x, residual, weight, eps)

    def count_stock(self, slot: str) -> None:
        """Records a call an adapter sent to stock before reaching the router (e.g. a variant no slot covers)."""
        self._count(slot, routed=False)

    def counts(self) -> dict[str, SeamCount]:
        """A snapshot of routed and stock calls per slot."""
        with self._lock:
            return {k: SeamCount(v.routed, v.stock) for k, v in self._counts.items()}

    def add_counts(self, counts: dict[str, SeamCount]) -> None:
        """Records calls that ran without reaching the router: a CUDA graph replaying the seam calls it captured."""
        with self._lock:
            for slot, c in counts.items():
                self._counts[slot].routed += c.routed
                self._counts[slot].stock += c.stock

    def reset_counts(self) -> None:
        with self._lock:
            self._counts = {name: SeamCount() for name in SLOTS}

    def _count(self, slot: str, routed: bool) -> None:
        with self._lock:
            c = self._counts[slot]
            if routed:
                c.routed += 1
            else:
                c.stock += 1

    def _site(self, spec: SlotSpec, values: dict, ops: list[Op]):
        """(op, leading dims, tensors, dims) for the first of `ops` whose domain covers the call, else None."""
        if not ops:
            return None
        inputs = spec.of_role(Role.INPUT)
        tensors, leads = {}, set()
        for a in inputs:
            t = values[a.name]
            if not isinstance(t, torch.Tensor):
                return None
            if a.shape and a.shape[0] == spec.count_dim and len(a.shape) == 2:  # rows: leading dims fold into T
                leads.add(tuple(t.shape[:-1]))
                t = t.reshape(-1, t.shape[-1]) if t.dim() != 2 else t
            elif a.shape and a.shape[0] == spec.count_dim:  # per-request blocks (attention's q[B, Hq, D])
                leads.add(tuple(t.shape[:1]))
            tensors[a.name] = t
        if len(leads) > 1:  # token-shaped inputs that disagree on their leading dims: not the slot's call
            return None
        lead = leads.pop() if leads else ()
        first = tensors[inputs[0].name]
        dims = bind_dims(spec, tensors)
        if dims is None or any(t.device != first.device or t.dtype != _dtype(spec, n, first.dtype)
                               for n, t in tensors.items()):
            return None
        for op in ops:
            if in_domain(op, spec, first.dtype, first.device, dims):
                return op, lead, tensors, dims
        return None


def _toward_zero(t: torch.Tensor) -> torch.Tensor:
    """Every element one unit in the last place closer to zero (zero stays zero): elementwise, so CUDA graphs
    capture it with the call it follows."""
    return torch.nextafter(t, torch.zeros((), dtype=t.dtype, device=t.device))


def _dtype(spec: SlotSpec, name: str, op_dtype: torch.dtype) -> torch.dtype:
    """The dtype an input must have: the call's own, or the fixed one the slot declares (page tables)."""
    arg = spec.arg(name)
    return op_dtype if arg.dtype == "T" else spec.dtype_of(arg, "")


def _bind_args(spec: SlotSpec, args: tuple, kwargs: dict) -> dict:
    """Maps the caller's inputs and scalars onto the slot's argument names, in ABI order, skipping outputs."""
    names = [a.name for a in spec.args if a.role is not Role.OUTPUT]
    values = dict(zip(names, args))
    values.update({k: v for k, v in kwargs.items() if k in names})
    for a in spec.of_role(Role.SCALAR):
        values.setdefault(a.name, a.default)
    missing = [n for n in names if n not in values]
    if missing:
        raise TypeError(f"{spec.name}: missing arguments {missing}")
    return values


def arm(path: str | os.PathLike | None, *, identity: str | None = None, workdir: str | None = None,
        twin_of: str | os.PathLike | None = None, twin_identity: str | None = None) -> SeamRouter:
    """A router for the bundle at `path` (null-armed for None), a twin of the bundle at `twin_of` when given; any
    load failure raises SeamLoadError."""
    return SeamRouter(_load(path, identity, "armed"), workdir=workdir, twin_of=_load(twin_of, twin_identity, "twin's"))


def _load(path: str | os.PathLike | None, identity: str | None, what: str) -> Bundle | None:
    if not path:
        return None
    try:
        bundle = load_bundle(path)
    except HotfloatError as e:
        raise SeamLoadError(f"{what} bundle {path}: {e}") from None
    if identity and bundle.identity != identity:
        raise SeamLoadError(f"{what} bundle {path} has identity {bundle.identity}, expected {identity}")
    return bundle


def arm_from_env(environ: dict | None = None) -> SeamRouter:
    """A router armed from HOTFLOAT_ARMED_BUNDLE (and HOTFLOAT_ARMED_IDENTITY), a twin when HOTFLOAT_TWIN_OF names
    a candidate, as every engine process does at start."""
    env = os.environ if environ is None else environ
    return arm(env.get(ENV_BUNDLE) or None, identity=env.get(ENV_IDENTITY) or None,
               twin_of=env.get(ENV_TWIN_OF) or None, twin_identity=env.get(ENV_TWIN_IDENTITY) or None)
