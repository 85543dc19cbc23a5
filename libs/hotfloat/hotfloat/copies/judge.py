"""The copy check a validator runs on every taken-in bundle before any GPU work: against the reference library,
then against every earlier submission in chain order, so the first committer keeps the credit."""

from __future__ import annotations

from ..record import Record
from .containment import Earlier, Match, closest, strength
from .fingerprint import Fingerprints
from .library import Library


class CopyCheck(Record):
    """The verdict on one candidate: what it copies, if anything, and the closest case either way (the report)."""

    copied: Match | None
    """The work it copies most (the library's examples share code with each other), else the first earlier
    submission it copies in chain order."""
    closest: Match | None
    """The strongest case found, copy or not."""
    compared: int
    """Works and earlier bundles it was compared with."""

    @property
    def copy_of(self) -> str | None:
        """`copy_of:<identity>` or `copy_of:reference:<work>/<file>`, as refusals and reports name it."""
        return None if self.copied is None else f"copy_of:{self.copied.of}"


def _named(m: Match, work: Earlier) -> Match:
    """A match with a work, named by the work's file the candidate copied."""
    kind, unit = m.theirs.split(" ", 1)
    path = work.fingerprints.sources.get(unit, unit) if kind == "op" else unit
    return m.model_copy(update={"of": f"reference:{work.name}/{path}"})


def judge(candidate: Fingerprints, earlier: list[Earlier], library: Library) -> CopyCheck:
    """`earlier`: the submissions committed before the candidate, oldest first (the candidate's own hotkey's left
    out: an author may build on their own work)."""
    works = [_named(m, w) for w in library.references() if (m := closest(candidate, w, library.generic))]
    others = [m for e in earlier if (m := closest(candidate, e, library.everything))]
    copied = max((m for m in works if m.is_copy), key=strength, default=None)
    copied = copied or next((m for m in others if m.is_copy), None)
    return CopyCheck(
        copied=copied,
        closest=max(works + others, key=strength, default=None),
        compared=len(library.works) + len(earlier),
    )
