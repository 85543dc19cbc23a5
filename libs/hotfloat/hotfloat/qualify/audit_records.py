"""The in-engine audit's records as the evidence keeps them: each kept call's outcome and each stratum's calls per
round, per engine (hotfloat.qualify.audit makes them; `recompute` judges them again from the records alone)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from ..record import Record
from .records import Role


class AuditCall(Record):
    """One kept execution of an audited call, opened and recomputed by the validator with its slot's fp32 reference
    (hotfloat.qualify.audit)."""

    slot: str
    round: Annotated[int, Field(ge=-1)]
    """The round it was kept in (-1: the settle round, with boot and warm-up)."""
    stratum: Annotated[int, Field(ge=0, lt=1 << 32)]
    """Its stratum's id (slot, sizes, dtype, scalars): the same calls carry the same id in every engine."""
    execution: Annotated[int, Field(ge=1)]
    """The stratum's execution number since the engine started: the same call has the same number in every engine."""
    routed: bool
    """The bundle served it (the candidate's own kernel ran), rather than the engine's stock code."""
    dtype: str
    rows: tuple[int, int, int]
    """(first row audited, rows audited, rows in the call); for attention, of the audited request's new tokens."""
    width: int
    """Row width of the call's first input."""
    kept: bool = True
    """False where the request's context passed what an entry holds: the same call is not kept in any engine."""
    max_abs_err: float = 0.0
    ratio: float = 0.0
    """Largest |out - ref| / (atol + rtol |ref|) over the outputs, with the slot's verify tolerance: above 1 the call
    is wrong (infinite where an output is not finite)."""
    inputs_changed: bool = False
    """The bundle's call left its inputs other than it was handed them: their words read again after the call (the
    recheck) do not have the MAC they had before it. Only a routed call is held to it (SGLang's stock norm writes
    its inputs in place); evidence from before the recheck (v5 of 2026-12-06 and earlier) says False."""

    @property
    def failed(self) -> bool:
        return self.kept and not self.ratio <= 1.0

    @property
    def site(self) -> tuple[int, int, int]:
        """(round, stratum, execution): which call it is, across engines."""
        return self.round, self.stratum, self.execution

    def describe(self) -> str:
        first, n, total = self.rows
        who = "the bundle's" if self.routed else "stock"
        return (
            f"{self.slot} execution {self.execution} of round {self.round} ({who}, {self.dtype}, rows "
            f"{first}-{first + n - 1} of [{total}, {self.width}]): max abs err {self.max_abs_err:.3g}, "
            f"{self.ratio:.3g}x the tolerance"
        )


class StratumCount(Record):
    """One stratum's calls in one round of one engine, as its device counter counted them (replays included)."""

    slot: str
    round: Annotated[int, Field(ge=-1)]
    stratum: Annotated[int, Field(ge=0, lt=1 << 32)]
    label: str
    """Its sizes, dtype and scalars, for people."""
    calls: Annotated[int, Field(ge=0)]
    routed: bool
    kept: Annotated[int, Field(ge=0)]


class SlotAudit(Record):
    """One slot's audited calls in one engine."""

    calls_audited: int
    calls_failed: int
    worst: AuditCall | None = None
    """The call furthest from the reference (highest ratio to its tolerance)."""


def summarise(calls: list[AuditCall]) -> dict[str, SlotAudit]:
    """Per slot: how many kept calls were recomputed, how many failed, and the worst."""
    slots: dict[str, SlotAudit] = {}
    for slot in sorted({c.slot for c in calls if c.kept}):
        mine = [c for c in calls if c.slot == slot and c.kept]
        slots[slot] = SlotAudit(
            calls_audited=len(mine), calls_failed=sum(c.failed for c in mine), worst=max(mine, key=lambda c: c.ratio)
        )
    return slots


class AuditRecord(Record):
    """One engine's audit over the run: every kept execution, recomputed, and every stratum's calls per round; or
    why a reply could not be read."""

    index: Annotated[int, Field(ge=0)]
    role: Role
    calls: list[AuditCall] = []
    strata: list[StratumCount] = []
    unaudited: dict[str, int] = {}
    """Calls per slot in strata past the engine's bound (the same in every engine)."""
    error: str | None = None
    """Why the engine's audit reply was refused, with the round (then later rounds are not read)."""
    slots: dict[str, SlotAudit] = {}
    """Per slot, derived from `calls` (a record whose summary disagrees with its calls is refused)."""

    @classmethod
    def of(
        cls,
        index: int,
        role: Role,
        calls: list[AuditCall],
        error: str | None = None,
        strata: list[StratumCount] = (),
        unaudited: dict[str, int] | None = None,
    ) -> AuditRecord:
        return cls(
            index=index,
            role=role,
            calls=calls,
            strata=list(strata),
            unaudited=dict(unaudited or {}),
            error=error,
            slots=summarise(calls),
        )

    def add(self, more: AuditRecord) -> AuditRecord:
        """This record with another round's appended (the first error stands)."""
        unaudited = dict(self.unaudited)
        for slot, n in more.unaudited.items():
            unaudited[slot] = unaudited.get(slot, 0) + n
        return AuditRecord.of(
            self.index,
            self.role,
            self.calls + more.calls,
            self.error or more.error,
            self.strata + more.strata,
            unaudited,
        )

    @model_validator(mode="after")
    def _summary(self):
        if self.slots != summarise(self.calls):
            raise ValueError("the per-slot audit summary disagrees with the audited calls")
        return self
