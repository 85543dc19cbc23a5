"""The seam router: per call, the armed bundle's kernel inside its declared domain, the caller's stock code outside.

Engine-agnostic: an engine adapter (the SGLang plugin, the transformers reference engine) hands each slot call here
with the slot's arguments and a `stock` callable; the router allocates the outputs, calls the bundle's entry with the
slot's positional write-into-output ABI, and counts what it did so a test can prove the bundle really ran.

A router built as a *twin* of a candidate (`twin_of`) never imports the candidate's code: it reads only the
manifest, and nudges the outputs inside the candidate's declared domains once the validator enabled their slots
(hotfloat.seams.twin). With an AuditConfig (hotfloat.seams.audit) the router keeps a secret sample of its slot calls
for the validator (every call of an audited slot runs its taps); with `handicap_us` every activation.silu_and_mul call is followed by a delay of that many
microseconds (a known slowdown the validator injects for calibration, never part of the engine identity). Arming
from paths or the environment is hotfloat.seams.arm.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..bundle import Bundle, Op
from ..slots import SLOTS, Role, SlotSpec, get_slot
from .audit import AuditConfig, Auditor
from .domain import bind_dims, in_domain
from .loader import load_entries, materialize
from .twin import EXACT_OUTPUTS, stochastic_ulp

HANDICAP_SLOT = "activation.silu_and_mul"
"""The slot whose calls `handicap_us` delays (calibration's positive control)."""


@dataclass
class SeamCount:
    """How many calls of one slot went to the bundle and how many to the stock implementation."""

    routed: int = 0
    stock: int = 0


class SeamRouter:
    """Routes slot calls between an armed bundle and stock implementations; null-armed when built without a bundle."""

    def __init__(
        self,
        bundle: Bundle | None = None,
        *,
        workdir: str | None = None,
        twin_of: Bundle | None = None,
        audit: AuditConfig | None = None,
        handicap_us: float = 0.0,
    ):
        self.bundle, self.twin_of = bundle, twin_of
        self._armed: dict[str, list[Op]] = {name: [] for name in SLOTS}
        self._nudged: dict[str, list[Op]] = {name: [] for name in SLOTS}
        self._entries: dict[str, Callable] = {}
        self._counts = {name: SeamCount() for name in SLOTS}
        self._lock = threading.Lock()
        self.twin_slots: frozenset[str] = frozenset()
        """Slots whose nudge is enabled (a twin only)."""
        self._flags: dict[tuple[str, torch.device], torch.Tensor] = {}
        self.audit = Auditor(audit) if audit is not None else None
        self.handicap_us = handicap_us
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
    def hooked(self) -> set[str]:
        """Slots whose seams the engine must hook: those it routes or nudges, and those its audit samples, so that
        every engine of a qualification sees (and audits) the same calls."""
        return self.slots | set(self.audit.slots if self.audit else ())

    @property
    def identity(self) -> str | None:
        """The armed bundle's identity, or None when null-armed."""
        return self.bundle.identity if self.bundle else None

    def call(self, slot: str, stock: Callable[..., torch.Tensor], *args, **kwargs):
        """Runs one call of `slot` with the slot's inputs and scalars (in ABI order); returns its output, or a tuple
        of its outputs in ABI order when the slot has several.

        `stock(*args, **kwargs)` is used, untouched, whenever no armed op's domain covers the call. A twin counts
        the calls inside its nudge sites as routed, enabled or not.
        """
        spec = get_slot(slot)
        values = _bind_args(spec, args, kwargs)
        armed, nudged = self._armed[slot], self._nudged[slot]
        bound = _bind(spec, values) if armed or nudged or self.audit else None
        found, nudge = _covering(spec, bound, armed), _covering(spec, bound, nudged)
        self._count(slot, routed=found is not None or nudge is not None)
        site = self.audit.stage(spec, bound[1], values, bound[2]) if self.audit and bound else None
        served = stock(*args, **kwargs) if found is None else self._run(spec, values, found, bound)
        outs = served if isinstance(served, tuple) else (served,)
        if nudge is not None:
            names = [a.name for a in spec.of_role(Role.OUTPUT)]
            outs = tuple(
                o if n in EXACT_OUTPUTS else stochastic_ulp(o, self._flag(slot, o.device))
                for n, o in zip(names, outs, strict=False)
            )  # the stock's outputs, as it gave them
            served = outs if isinstance(served, tuple) else outs[0]
        if self.handicap_us and slot == HANDICAP_SLOT:
            _delay(outs[0].device, self.handicap_us)
        if site is not None:
            outputs = dict(zip((a.name for a in spec.of_role(Role.OUTPUT)), outs, strict=False))
            self.audit.commit(site, outputs, routed=found is not None)
        return served

    def set_twin_slots(self, slots: set[str]) -> set[str]:
        """Enables the twin's nudge for `slots` (and disables it for every other slot); returns the slots enabled,
        those of `slots` the twin has nudge sites for. Call it while the engine is idle: it waits for the device."""
        with self._lock, torch.inference_mode():  # flags made in an inference-mode forward are inference tensors
            self.twin_slots = frozenset(s for s in slots if self._nudged.get(s))
            for (slot, _), flag in self._flags.items():
                flag.fill_(slot in self.twin_slots)
            devices = {d for _, d in self._flags if d.type == "cuda"}
        for d in devices:
            torch.cuda.synchronize(d)
        return set(self.twin_slots)

    def _flag(self, slot: str, device: torch.device) -> torch.Tensor:
        """The slot's enable flag on `device`, made at its first (eager) use; the device value is what a captured
        nudge reads on every replay."""
        with self._lock:
            flag = self._flags.get((slot, device))
            if flag is None:
                if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
                    raise RuntimeError(f"the twin's first {slot} call on {device} came inside a CUDA-graph capture")
                flag = self._flags[(slot, device)] = torch.tensor(slot in self.twin_slots, device=device)
            return flag

    def _run(self, spec: SlotSpec, values: dict, op: Op, bound: tuple):
        """Calls the armed op with freshly allocated outputs."""
        lead, tensors, dims = bound
        fn = self._entries[op.key]
        outs = {}
        for a in spec.of_role(Role.OUTPUT):
            ref = tensors[spec.of_role(Role.INPUT)[0].name]
            outs[a.name] = torch.empty(spec.shape_of(a, dims), dtype=ref.dtype, device=ref.device)
        positional = [
            outs[a.name] if a.role is Role.OUTPUT else tensors.get(a.name, values.get(a.name)) for a in spec.args
        ]
        fn(*positional)
        shaped = tuple(o.reshape(*lead, *o.shape[1:]) for o in outs.values())
        return shaped[0] if len(shaped) == 1 else shaped

    def silu_and_mul(self, x: torch.Tensor, *, stock: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """activation.silu_and_mul of x[..., 2d] -> [..., d]; `stock(x)` outside the armed domain."""
        return self.call("activation.silu_and_mul", stock, x)

    def rmsnorm(
        self, x: torch.Tensor, weight: torch.Tensor, eps: float, *, stock: Callable[..., torch.Tensor]
    ) -> torch.Tensor:
        """norm.rmsnorm of x[..., h] with weight[h] and eps -> [..., h]; `stock(x, weight, eps)` outside the domain."""
        return self.call("norm.rmsnorm", stock, x, weight, eps)

    def fused_add_rmsnorm(
        self,
        x: torch.Tensor,
        residual: torch.Tensor,
        weight: torch.Tensor,
        eps: float,
        *,
        stock: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    ) -> tuple[torch.Tensor, torch.Tensor]:
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


def _bind(spec: SlotSpec, values: dict):
    """(leading dims, tensors with leading dims folded into rows, dims) of a call that is the slot's, else None."""
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
    first = tensors[inputs[0].name]
    dims = bind_dims(spec, tensors)
    if dims is None or any(
        t.device != first.device or t.dtype != _dtype(spec, n, first.dtype) for n, t in tensors.items()
    ):
        return None
    return (leads.pop() if leads else ()), tensors, dims


def _covering(spec: SlotSpec, bound, ops: list[Op]) -> Op | None:
    """The first of `ops` whose declared domain covers the bound call, else None."""
    if bound is None:
        return None
    first = bound[1][spec.of_role(Role.INPUT)[0].name]
    return next((op for op in ops if in_domain(op, spec, first.dtype, first.device, bound[2])), None)


def _delay(device: torch.device, us: float) -> None:
    """The calibration handicap: a GPU spin of `us` microseconds in stream order (capture-safe), a host spin on
    CPU."""
    if device.type == "cuda":
        torch.cuda._sleep(int(us * torch.cuda.get_device_properties(device).clock_rate / 1000))
        return
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _dtype(spec: SlotSpec, name: str, op_dtype: torch.dtype) -> torch.dtype:
    """The dtype an input must have: the call's own, or the fixed one the slot declares (page tables)."""
    arg = spec.arg(name)
    return op_dtype if arg.dtype == "T" else spec.dtype_of(arg, "")


def _bind_args(spec: SlotSpec, args: tuple, kwargs: dict) -> dict:
    """Maps the caller's inputs and scalars onto the slot's argument names, in ABI order, skipping outputs."""
    names = [a.name for a in spec.args if a.role is not Role.OUTPUT]
    values = dict(zip(names, args, strict=False))  # kwargs and defaults fill the rest
    values.update({k: v for k, v in kwargs.items() if k in names})
    for a in spec.of_role(Role.SCALAR):
        values.setdefault(a.name, a.default)
    missing = [n for n in names if n not in values]
    if missing:
        raise TypeError(f"{spec.name}: missing arguments {missing}")
    return values
