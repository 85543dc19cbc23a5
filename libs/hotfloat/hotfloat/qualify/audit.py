"""The validator's side of the in-engine audit (hotfloat.seams.audit): after every round, open each engine's kept
entries with the qualification's secret key, check their MACs, recompute each with its slot's fp32 reference on the
CPU and judge it with the slot's verify tolerance; at the end, judge the engines against each other.

Engine bytes are untrusted (candidate code runs in C): every part is a strict record, every entry's stratum must be
an audited slot's with bounded sizes, its words are opened only within its own layout, and anything that does not
fit is refused in one sentence as that engine's fault, never a traceback. Each entry's work is bounded by its layout
(hotfloat.audit.layout.MAX_ENTRY_BYTES), and each round's judging has a deadline. The evidence keeps each call's
outcome (audit_records.AuditCall), not its tensors, so `recompute` replays `judge_audit` from the records alone.

What the engines must agree on: the same key keeps the same executions of the same strata in every engine, and the
strata count the same calls, since B, C and B' serve the same prompts through the same engine. B and B' that differ
mean the workload is not deterministic (NO_DECISION); C that differs from them made other calls or tampered with its
counters, its fault. Stock kernels sit far inside the verify tolerances, so a baseline entry beyond its tolerance
means the engine or the audit is broken: NO_DECISION, never a verdict on the candidate.
"""

from __future__ import annotations

import base64
import binascii
import math
import statistics
import time
from collections.abc import Iterable

import numpy as np
import torch
from pydantic import ValidationError

from ..audit.config import AuditConfig
from ..audit.kinds import KINDS, MAX_CONTEXT, MAX_ROWS
from ..audit.layout import layout_for, recast, tap_words
from ..audit.philox import PARAMS, mac, routed_mac, seal_words, unseal
from ..record import first_error
from ..slots import Role, get_slot
from .messages import AuditEntry, AuditPart
from .audit_records import AuditCall, AuditRecord, StratumCount
from .records import Role as EngineRole

ROUND_DEADLINE_S = 120.0
"""Judging one engine's round at most: its entries are bounded in number and size, so an honest round takes a
fraction of this; one past it is refused as the engine's fault."""
MAX_DIM = 1 << 20


def audit_round(
    index: int, role: EngineRole, rnd: int, parts: list, config: AuditConfig, deadline_s: float = ROUND_DEADLINE_S
) -> AuditRecord:
    """One engine's reply for one round, every entry opened and recomputed; a malformed or altered reply is the
    record's `error`. Never raises on engine bytes."""
    try:
        return _audit_round(index, role, rnd, parts, config, time.monotonic() + deadline_s)
    except _Refused as e:
        return AuditRecord.of(index, role, [], f"round {rnd}: {e}")


class _Refused(Exception):
    pass


def _audit_round(index, role, rnd, parts, config, deadline) -> AuditRecord:
    try:
        typed = [AuditPart.model_validate(p) for p in parts]
    except ValidationError as e:
        raise _Refused(f"malformed audit part: {first_error(e, 'part')}") from None
    if not typed or [p.part for p in typed] != list(range(len(typed))) or {p.parts for p in typed} != {len(typed)}:
        raise _Refused("audit parts are missing or out of order")
    if {p.round for p in typed} != {rnd}:
        raise _Refused(f"the reply is for round {sorted({p.round for p in typed})}, not {rnd}")
    if any(p.strata or p.unaudited or p.error for p in typed[1:]):
        raise _Refused("only the first part may carry the round's strata")
    if typed[0].error:
        raise _Refused(f"the engine's audit failed: {typed[0].error}")
    strata = [_stratum(s, rnd, config) for s in typed[0].strata]
    if len({s.stratum for s in strata}) != len(strata):
        raise _Refused("a stratum is reported twice")
    calls = []
    for p in typed:
        try:
            data = base64.b64decode(p.data, validate=True)
        except (binascii.Error, ValueError):
            raise _Refused(f"part {p.part}: data is not base64") from None
        for k, entry in enumerate(p.entries):
            if time.monotonic() > deadline:
                raise _Refused(f"judging passed its deadline at part {p.part} entry {k}")
            try:
                calls.append(open_entry(entry, data, rnd, config))
            except _Refused as e:
                raise _Refused(f"part {p.part} entry {k} ({entry.slot[:40]}): {e}") from None
    ids = {s.stratum for s in strata}
    if any(c.stratum not in ids for c in calls):
        raise _Refused("an entry belongs to no reported stratum")
    if len({c.site for c in calls}) != len(calls):
        raise _Refused("an execution is kept twice")
    return AuditRecord.of(index, role, calls, None, strata, dict(typed[0].unaudited))


def _stratum(s, rnd: int, config: AuditConfig) -> StratumCount:
    lay = _layout(s.slot, s.dims, s.dtype, s.scalars, config)
    label = f"{','.join(f'{k}={v}' for k, v in sorted(s.dims.items()))} {s.dtype}"
    return StratumCount(
        slot=s.slot, round=rnd, stratum=lay.ring, label=label, calls=s.calls, routed=s.routed, kept=s.kept
    )


def _layout(slot: str, dims: dict, dtype: str, scalars: dict, config: AuditConfig):
    if slot not in KINDS or slot not in config.audited:
        raise _Refused(f"{slot[:40]} is not an audited slot")
    spec = get_slot(slot)
    names = {n for a in spec.args if a.role in (Role.INPUT, Role.OUTPUT) for e in a.shape for n in _names(e)}
    if set(dims) != names or any(not (0 if k == "N" else 1) <= v <= MAX_DIM for k, v in dims.items()):
        raise _Refused(f"sizes {dict(list(dims.items())[:12])} are not the slot's")
    if set(scalars) != {a.name for a in spec.of_role(Role.SCALAR)} or not all(map(math.isfinite, scalars.values())):
        raise _Refused("scalars are not the slot's or not finite")
    if spec.name.startswith("attention") and dims["Hq"] % dims["Hkv"]:
        raise _Refused("query heads are not a multiple of KV heads")
    lay = layout_for(spec, dims, dtype, scalars, min(config.rows, MAX_ROWS), min(config.context, MAX_CONTEXT))
    if lay is None:
        raise _Refused(f"dtype {dtype} is not one of the slot's")
    return lay


def _names(expr: str) -> Iterable[str]:
    return (p.strip() for term in expr.split("+") for p in term.split("*") if p.strip() and not p.strip().isdigit())


def open_entry(entry: AuditEntry, data: bytes, rnd: int, config: AuditConfig) -> AuditCall:
    """One entry opened (its words within its layout, its MAC), recast as a call of its slot and judged against the
    slot's fp32 reference; refused (`_Refused`) where anything does not fit."""
    lay = _layout(entry.slot, entry.dims, entry.dtype, entry.scalars, config)
    if entry.words > lay.words or entry.words < PARAMS or entry.offset + 8 * entry.words > len(data):
        raise _Refused(f"its {entry.words} words do not fit its layout of {lay.words} or the part's data")
    cipher = torch.frombuffer(bytearray(data[entry.offset : entry.offset + 8 * entry.words]), dtype=torch.int64)
    plain, tag = unseal(config.key, entry.execution, lay.ring, cipher, entry.routed)
    if tag != int(entry.mac):
        raise _Refused(f"execution {entry.execution} fails its MAC: the entry was altered after it was taken")
    row = torch.zeros(lay.words, dtype=torch.int64)
    row[: plain.numel()] = plain
    spec = get_slot(lay.slot)
    first = next(a.name for a in spec.of_role(Role.INPUT))
    call = dict(
        slot=lay.slot,
        round=rnd,
        stratum=lay.ring,
        execution=entry.execution,
        routed=entry.routed,
        dtype=lay.dtype,
        inputs_changed=entry.routed and _inputs_mac(config.key, entry, lay, plain, tag) != int(entry.recheck),
    )
    if int(row[0]) == 0:  # its request's context passed the entry's bound: not kept, in any engine
        return AuditCall(**call, rows=(0, 0, 0), width=0, kept=False)
    got = recast(lay, row)
    if isinstance(got, str):
        raise _Refused(got)
    inputs, outputs, rows = got
    err, ratio = distance(spec, lay.dtype, outputs, spec.reference({**inputs, **dict(lay.scalars)}))
    return AuditCall(**call, rows=rows, width=int(inputs[first].shape[-1]), max_abs_err=err, ratio=ratio)


def _inputs_mac(key: int, entry: AuditEntry, lay, plain: torch.Tensor, tag: int) -> int:
    """The MAC the entry's parameter and input words have, as the recheck computed it after the call: the entry's MAC
    less its output words' and its routed flag's (the output pieces are the row's few words; words past the entry's
    length are zeros and add nothing)."""
    outs = tap_words(lay, output=True)
    outs = outs[outs < plain.numel()]
    theirs = mac(plain.numpy().view(np.uint64)[outs], seal_words(key, entry.execution, lay.ring, outs)[1])
    return (tag - theirs - routed_mac(key, entry.execution, lay.ring, entry.routed)) % (1 << 64)


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


def judge_audit(
    audits: list[AuditRecord] | None, slack: float = 0.0, routed: dict[str, int] | None = None
) -> tuple[str, str] | None:
    """What the audits say about the qualification, or None when nothing against it:
    - NO_DECISION when a baseline's audit was refused or has an entry beyond its tolerance, or B and B' kept other
      calls or counted other calls (the engine or the audit is broken, not the candidate);
    - FAIL when the candidate's audit was refused (a malformed, altered or late reply), has an entry beyond its
      tolerance (routed or stock: only the candidate's code differs), a call of the bundle's that rewrote its inputs,
      kept or counted other calls than the baselines, routed a slot no audit can see, or routed an audited slot none
      of whose kept calls it served;
    - FAIL when the bundle's calls of a slot are more than `slack` times as far from the reference as stock's.
    `routed` is the candidate's routed calls per slot (its seam counts)."""
    audits = audits or []
    base = [a for a in audits if a.role == "B"]
    cand = next((a for a in audits if a.role == "C"), None)
    for a in base:
        if a.error or any(s.calls_failed for s in a.slots.values()):
            return "NO_DECISION", f"infrastructure: baseline engine {a.index}'s audit failed: {a.error or _failures(a)}"
    if cand is None:
        return None
    if cand.error:
        return "FAIL", f"the candidate engine's audit reply was refused: {cand.error}"
    if any(s.calls_failed for s in cand.slots.values()):
        return "FAIL", f"audit: {_failures(cand)}"
    if changed := [c for c in cand.calls if c.inputs_changed]:
        return "FAIL", (
            f"audit: the bundle rewrote its inputs in {len(changed)} of the kept calls it served, first "
            f"{changed[0].slot} execution {changed[0].execution} of round {changed[0].round}: a kernel may write its "
            "outputs only (what it was handed, such as the batch's page table or KV cache, the next calls read)"
        )
    if len(base) == 2 and (why := _disagree(base[0], base[1])):
        return "NO_DECISION", f"infrastructure: the baseline engines' audits disagree: {why}"
    if base and (why := _disagree(base[0], cand)):
        return "FAIL", f"audit: the candidate engine's calls are not the baseline's: {why}"
    if (why := _unseen(cand, routed or {})) is not None:
        return "FAIL", f"audit: {why}"
    return _less_accurate(audits, cand, slack) if slack else None


def _disagree(a: AuditRecord, b: AuditRecord) -> str | None:
    """Why two engines' audits do not cover the same calls, or None."""
    calls = {(s.round, s.stratum): (s.slot, s.calls) for s in a.strata}
    other = {(s.round, s.stratum): (s.slot, s.calls) for s in b.strata}
    for k in sorted(calls.keys() | other.keys()):
        if calls.get(k) != other.get(k):
            got, want = other.get(k), calls.get(k)
            slot = (got or want)[0]
            return (
                f"in round {k[0]} a {slot} stratum made {got[1] if got else 0} calls in engine {b.index}, "
                f"{want[1] if want else 0} in engine {a.index}"
            )
    kept, theirs = {c.site for c in a.calls}, {c.site for c in b.calls}
    if kept != theirs:
        r, _, e = min(kept ^ theirs)
        return f"in round {r} engine {b.index} kept {'another execution than' if kept - theirs else 'more than'} execution {e}"
    if a.unaudited != b.unaudited:
        return f"unaudited calls {b.unaudited} against {a.unaudited}"
    return None


def _unseen(cand: AuditRecord, routed: dict[str, int]) -> str | None:
    """Why some routed slot escaped the audit: a slot no audit can keep, or one whose kept calls were all stock."""
    for slot, n in sorted(routed.items()):
        if not n:
            continue
        if slot not in KINDS:
            return f"the candidate routed {n} calls of {slot}, which no in-engine audit can check"
        if not any(c.slot == slot and c.routed and c.kept for c in cand.calls):
            return (
                f"the candidate routed {n} calls of {slot}, and none of the audit's kept calls of it was served by the "
                "bundle"
            )
    return None


def _less_accurate(audits: list[AuditRecord], cand: AuditRecord, slack: float) -> tuple[str, str] | None:
    """FAIL when the bundle's calls of a slot are more than `slack` times as far from the reference as the stock
    kernel's calls of the same sites in B and B' (medians of the per-call worst ratio to the tolerance): an accurate
    kernel rounds once, as stock does; one that is 1% off sits at 3.7x stock's on the H200 (bf16 silu)."""
    for slot in sorted(cand.slots):
        if (medians := slot_medians(audits, cand, slot)) is None:
            continue
        got, base = medians
        n = sum(c.slot == slot and c.routed and c.kept for c in cand.calls)
        if got > max(slack * base, AUDIT_FLOOR):
            return "FAIL", (
                f"audit: the bundle's calls of {slot} are {got / max(base, 1e-12):.1f}x as far from the fp32 reference "
                f"as the stock kernel's on the same calls (median error {got:.3g} of the verify tolerance against "
                f"{base:.3g}, over {n} calls; at most {slack:g}x): more than an accurate kernel's rounding"
            )
    return None


def slot_medians(audits: list[AuditRecord], cand: AuditRecord, slot: str) -> tuple[float, float] | None:
    """(the bundle's, stock's) median over `slot`'s kept calls the bundle served in C of each call's worst error over
    its tolerance; stock's are the baseline engines' calls of the same sites. None when the bundle served none."""
    mine = {c.site: c.ratio for c in cand.calls if c.slot == slot and c.routed and c.kept}
    stock = [c.ratio for a in audits if a.role == "B" for c in a.calls if c.site in mine and c.kept]
    return (statistics.median(mine.values()), statistics.median(stock)) if stock and mine else None


def coverage(record: AuditRecord) -> dict[str, dict[int, tuple[int, int, int]]]:
    """Per slot and round: (calls, calls the bundle served, kept calls it served), for the evidence and its readers."""
    out: dict[str, dict[int, list[int]]] = {}
    for s in record.strata:
        row = out.setdefault(s.slot, {}).setdefault(s.round, [0, 0, 0])
        row[0] += s.calls
        row[1] += s.calls if s.routed else 0
    for c in record.calls:
        if c.routed and c.kept:
            out.setdefault(c.slot, {}).setdefault(c.round, [0, 0, 0])[2] += 1
    return {slot: {r: tuple(v) for r, v in sorted(rounds.items())} for slot, rounds in sorted(out.items())}


def _failures(a: AuditRecord) -> str:
    """The failing slots, worst first, each with its worst call as evidence."""
    failed = sorted((s for s in a.slots.values() if s.calls_failed), key=lambda s: -s.worst.ratio)
    return "; ".join(
        f"{s.calls_failed} of {s.calls_audited} audited calls of {s.worst.slot} are wrong beyond its "
        f"verify tolerance, worst {s.worst.describe()}"
        for s in failed
    )
