"""The validator's side of the in-engine audit (hotfloat.seams.audit): decode an engine's `audit` messages,
recompute every entry with its slot's fp32 reference on the CPU and judge it with the slot's verify tolerance.

Engine bytes are untrusted (candidate code runs in C and can write to its channel): every part is a strict record,
every tensor is bounds-checked against its part's data and its slot's shapes, and a malformed reply is refused with
one sentence, never a traceback. The evidence keeps each call's outcome (records.AuditCall), not its tensors, so
`recompute` replays `judge_audit` from the records alone.

Stock kernels sit far inside the verify tolerances (bf16: 0.02 + 2% of the value, against one or two roundings of
at most 0.4% each; fp32: 1e-5 + 1e-5 against reduction-order differences of ~1e-7), so a baseline engine whose
audit fails means the engine or the audit is broken: NO_DECISION, never a verdict on the candidate.
"""

from __future__ import annotations

import base64
import binascii
import math
import statistics

import torch
from pydantic import ValidationError

from ..record import first_error
from ..seams.audit import AUDITABLE
from ..seams.domain import bind_dims
from ..slots import Role, get_slot
from ..verdict import Status
from .messages import AuditEntry, AuditPart
from .records import AuditCall, AuditRecord, Role as EngineRole


def audit_record(index: int, role: EngineRole, parts: list[AuditPart | dict]) -> AuditRecord:
    """One engine's audit reply (typed parts as the channel's decoder gave them, or plain dicts), every entry
    recomputed; a malformed reply is recorded as the record's `error`."""
    try:
        typed = [AuditPart.model_validate(p) for p in parts]
    except ValidationError as e:
        return AuditRecord.of(index, role, [], f"malformed audit part: {first_error(e, 'part')}")
    if not typed or [p.part for p in typed] != list(range(len(typed))) or {p.parts for p in typed} != {len(typed)}:
        return AuditRecord.of(index, role, [], "audit parts are missing or out of order")
    calls = []
    for p in typed:
        try:
            data = base64.b64decode(p.data, validate=True)
        except (binascii.Error, ValueError):
            return AuditRecord.of(index, role, [], f"audit part {p.part}: data is not base64")
        for k, entry in enumerate(p.entries):
            call = recompute_entry(entry, data)
            if isinstance(call, str):
                return AuditRecord.of(index, role, [], f"audit part {p.part} entry {k} ({entry.slot[:40]}): {call}")
            calls.append(call)
    return AuditRecord.of(index, role, calls)


def recompute_entry(entry: AuditEntry, data: bytes) -> AuditCall | str:
    """The entry judged against the slot's fp32 reference, or why it is malformed."""
    if entry.slot not in AUDITABLE:
        return "not an audited slot"
    spec = get_slot(entry.slot)
    if entry.dtype not in spec.dtypes:
        return f"dtype {entry.dtype} is not one of the slot's"
    args = {a.name: a for a in spec.args if a.role in (Role.INPUT, Role.OUTPUT)}
    if set(entry.tensors) != set(args) or set(entry.scalars) != {a.name for a in spec.of_role(Role.SCALAR)}:
        return "tensors or scalars are not the slot's arguments"
    if not all(math.isfinite(v) for v in entry.scalars.values()):
        return "a scalar is not finite"
    tensors = {}
    for name, ref in entry.tensors.items():
        dtype = spec.dtype_of(args[name], entry.dtype)
        size = math.prod(ref.shape) * dtype.itemsize
        if len(ref.shape) != len(args[name].shape) or ref.offset + size > len(data):
            return f"tensor {name} has the wrong rank or lies beyond the data"
        tensors[name] = torch.frombuffer(bytearray(data[ref.offset : ref.offset + size]), dtype=dtype).reshape(
            ref.shape
        )
    inputs = {a.name: tensors[a.name] for a in spec.of_role(Role.INPUT)}
    dims = bind_dims(spec, inputs)
    first, n, total = entry.rows
    if dims is None or any(tuple(tensors[a.name].shape) != spec.shape_of(a, dims) for a in spec.of_role(Role.OUTPUT)):
        return "shapes contradict the slot"
    if not 1 <= n == dims[spec.count_dim] or first + n > total:
        return f"rows {entry.rows} do not match the tensors"
    if not _offsets_fit(tensors):
        return "its offsets or page indices lie outside its own tensors"
    err, ratio = distance(spec, entry.dtype, tensors, spec.reference({**inputs, **entry.scalars}))
    return AuditCall(
        slot=entry.slot,
        site=entry.site,
        execution=entry.execution,
        dtype=entry.dtype,
        rows=(first, n, total),
        width=int(next(iter(inputs.values())).shape[-1]),
        max_abs_err=err,
        ratio=ratio,
    )


def _offsets_fit(t: dict[str, torch.Tensor]) -> bool:
    """A per-request entry's offsets start at 0, grow (every request has a new token) and end inside the tensors
    they index, and its page indices lie in its pool: the reference indexes with them (row-wise entries have none)."""
    if "qo_indptr" not in t:
        return True
    qo, kv, pages, pool = t["qo_indptr"].tolist(), t["kv_indptr"].tolist(), t["kv_indices"], t["k_buffer"].shape[0]
    return (
        qo[0] == kv[0] == 0
        and all(a < b for a, b in zip(qo, qo[1:], strict=False))
        and all(a <= b for a, b in zip(kv, kv[1:], strict=False))
        and qo[-1] == t["q"].shape[0]
        and kv[-1] <= pages.shape[0]
        and bool(((pages >= 0) & (pages < pool)).all())
    )


def distance(spec, dtype: str, got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> tuple[float, float]:
    """(max abs error, max error in units of the slot's verify tolerance) of a call's outputs against the reference;
    a non-finite output is infinitely far."""
    tol, err, ratio = spec.tolerances[dtype], 0.0, 0.0
    for a in spec.of_role(Role.OUTPUT):
        g, w = got[a.name].float(), want[a.name].float()
        diff = (g - w).abs()
        q = torch.where(torch.isfinite(g), diff / (tol.atol + tol.rtol * w.abs()), math.inf)
        err, ratio = max(err, float(torch.nan_to_num(diff, nan=math.inf).max())), max(ratio, float(q.max()))
    return err, ratio


AUDIT_FLOOR = 0.25
"""The accuracy check never holds a slot to less than a quarter of its verify tolerance (fp32 stock sits near 0)."""


def judge_audit(audits: list[AuditRecord] | None, slack: float = 0.0) -> tuple[Status, str] | None:
    """What the audits say about the qualification: NO_DECISION when a baseline engine's audit failed or was refused;
    FAIL when the candidate's was refused, has a call wrong beyond its slot's tolerance, or kept no call of a slot
    the baseline kept calls of (every engine audits the same calls); None when they say nothing against it."""
    for a in audits or ():
        if a.role == "B" and (a.error or any(s.calls_failed for s in a.slots.values())):
            why = a.error or _failures(a)
            return (
                "NO_DECISION",
                f"infrastructure: baseline engine {a.index}'s audit disagrees with the reference: {why}",
            )
    cand = next((a for a in audits or () if a.role == "C"), None)
    if cand is None:
        return None
    if cand.error:
        return "FAIL", f"the candidate engine's audit reply was refused: {cand.error}"
    if any(s.calls_failed for s in cand.slots.values()):
        return "FAIL", f"audit: {_failures(cand)}"
    for b in (a for a in audits if a.role == "B"):
        for slot, s in b.slots.items():
            if slot not in cand.slots:
                return "FAIL", (
                    f"audit: the candidate engine kept no audited call of {slot}, where baseline engine "
                    f"{b.index} kept {s.calls_audited} (every engine audits the same calls)"
                )
    return _less_accurate(audits, cand, slack) if slack else None


def _less_accurate(audits: list[AuditRecord], cand: AuditRecord, slack: float) -> tuple[Status, str] | None:
    """FAIL when a slot's candidate calls are more than `slack` times as far from the reference as the stock
    kernel's calls of the same sites in B and B' (medians of the per-call worst ratio to the tolerance): an accurate
    kernel rounds once, as stock does; one that is 1% off sits at 3.7x stock's on the H200 (bf16 silu)."""
    for slot in sorted(cand.slots):
        if (medians := slot_medians(audits, cand, slot)) is None:
            continue
        got, base = medians
        if got > max(slack * base, AUDIT_FLOOR):
            return "FAIL", (
                f"audit: the candidate's calls of {slot} are {got / max(base, 1e-12):.1f}x as far from the "
                f"fp32 reference as the stock kernel's on the same calls (median error {got:.3g} of the "
                f"verify tolerance against {base:.3g}, over {cand.slots[slot].calls_audited} calls; at most {slack:g}x): more "
                "than an accurate kernel's rounding"
            )
    return None


def slot_medians(audits: list[AuditRecord], cand: AuditRecord, slot: str) -> tuple[float, float] | None:
    """(the candidate's, stock's) median over `slot`'s audited calls of each call's worst error over its tolerance;
    stock's are the baseline engines' calls of the same sites. None when either side kept no call of it."""
    stock = [c.ratio for a in audits if a.role == "B" for c in a.calls if c.slot == slot]
    mine = [c.ratio for c in cand.calls if c.slot == slot]
    return (statistics.median(mine), statistics.median(stock)) if stock and mine else None


def _failures(a: AuditRecord) -> str:
    """The failing slots, worst first, each with its worst call as evidence."""
    failed = sorted((s for s in a.slots.values() if s.calls_failed), key=lambda s: -s.worst.ratio)
    return "; ".join(
        f"{s.calls_failed} of {s.calls_audited} audited calls of {s.worst.slot} are wrong beyond its "
        f"verify tolerance, worst {s.worst.describe()}"
        for s in failed
    )
