"""Evidence v3's audit, kept so that the evidence committed under it recomputes to what it decided: a sample of call
sites picked on the host, its latest entries judged over every candidate call, routed or not. Qualifications since
keep evidence v4 and judge it with hotfloat.qualify.audit, which closed the holes this one had (entries evicted by
later rounds, an audit the candidate could pre-empt, stock calls outvoting the bundle's)."""

from __future__ import annotations

import statistics
from typing import Annotated

from pydantic import Field, model_validator

from ..record import Record
from .records import Role

AUDIT_FLOOR = 0.25


class CallV3(Record):
    """One audited call as evidence v3 kept it."""

    slot: str
    site: Annotated[int, Field(ge=0)]
    execution: Annotated[int, Field(ge=1)]
    dtype: str
    rows: tuple[int, int, int]
    width: int
    max_abs_err: float
    ratio: float

    @property
    def failed(self) -> bool:
        return not self.ratio <= 1.0

    def describe(self) -> str:
        first, n, total = self.rows
        return (
            f"{self.slot} call {self.site} (execution {self.execution}, {self.dtype}, rows {first}-{first + n - 1} "
            f"of [{total}, {self.width}]): max abs err {self.max_abs_err:.3g}, {self.ratio:.3g}x the tolerance"
        )


class SlotV3(Record):
    calls_audited: int
    calls_failed: int
    worst: CallV3 | None = None


class RecordV3(Record):
    """One engine's audit as evidence v3 kept it."""

    index: Annotated[int, Field(ge=0)]
    role: Role
    calls: list[CallV3] = []
    error: str | None = None
    slots: dict[str, SlotV3] = {}

    @model_validator(mode="after")
    def _summary(self):
        want = {}
        for slot in sorted({c.slot for c in self.calls}):
            mine = [c for c in self.calls if c.slot == slot]
            want[slot] = SlotV3(
                calls_audited=len(mine),
                calls_failed=sum(c.failed for c in mine),
                worst=max(mine, key=lambda c: c.ratio),
            )
        if self.slots != want:
            raise ValueError("the per-slot audit summary disagrees with the audited calls")
        return self


def judge_v3(audits: list[RecordV3], slack: float) -> tuple[str, str] | None:
    """Evidence v3's judgement, exactly as it ran."""
    for a in audits:
        if a.role == "B" and (a.error or any(s.calls_failed for s in a.slots.values())):
            why = a.error or _failures(a)
            return (
                "NO_DECISION",
                f"infrastructure: baseline engine {a.index}'s audit disagrees with the reference: {why}",
            )
    cand = next((a for a in audits if a.role == "C"), None)
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
    if not slack:
        return None
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


def slot_medians(audits: list[RecordV3], cand: RecordV3, slot: str) -> tuple[float, float] | None:
    """(the candidate's, stock's) median ratio to the tolerance over the slot's audited calls (all of C's)."""
    stock = [c.ratio for a in audits if a.role == "B" for c in a.calls if c.slot == slot]
    mine = [c.ratio for c in cand.calls if c.slot == slot]
    return (statistics.median(mine), statistics.median(stock)) if stock and mine else None


def _failures(a: RecordV3) -> str:
    failed = sorted((s for s in a.slots.values() if s.calls_failed), key=lambda s: -s.worst.ratio)
    return "; ".join(
        f"{s.calls_failed} of {s.calls_audited} audited calls of {s.worst.slot} are wrong beyond its "
        f"verify tolerance, worst {s.worst.describe()}"
        for s in failed
    )
