"""The copy check a validator runs on every taken-in bundle before any GPU work: against the reference library,
then against every earlier submission in chain order, so the first committer keeps the credit."""

from __future__ import annotations

from ..record import Record
from .containment import Earlier, Match, closest
from .fingerprint import Fingerprints
from .library import Library


class CopyCheck(Record):
    """The verdict on one candidate: what it copies, if anything, and the closest case either way (the report)."""

    copy: Match | None
    """The first earlier unit it copies: the reference library first, then submissions in chain order."""
    closest: Match | None
    """The strongest case found, copy or not."""
    compared: int
    """Works and earlier bundles it was compared with."""

    @property
    def copy_of(self) -> str | None:
        """`copy_of:<identity>` or `copy_of:reference:<work>/<file>`, as refusals and reports name it."""
        return None if self.copy is None else f"copy_of:{self.copy.of}"


def _named(m: Match, work: Earlier) -> Match:
    """A match with a work, named by the work's file the candidate copied."""
    kind, unit = m.theirs.split(" ", 1)
    path = work.fingerprints.sources.get(unit, unit) if kind == "op" else unit
    return m.model_copy(update={"of": f"reference:{work.name}/{path}"})


def judge(candidate: Fingerprints, earlier: list[Earlier], library: Library) -> CopyCheck:
    """`earlier`: the submissions committed before the candidate, oldest first (the candidate's own hotkey's left
    out: an author may build on their own work)."""
    found = best = None
    plan = [(w, library.generic, True) for w in library.references()] + [
        (e, library.everything, False) for e in earlier
    ]
    for other, common, work in plan:
        m = closest(candidate, other, common)
        if m is None:
            continue
        m = _named(m, other) if work else m
        if m.copy and found is None:
            found = m
        if best is None or (m.copy, m.score) > (best.copy, best.score):
            best = m
    return CopyCheck(copy=found, closest=best, compared=len(plan))
