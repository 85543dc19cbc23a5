"""Is a candidate a copy? Containment of normalized fingerprints against earlier bundles, op by op and file by file.

Between a candidate unit C and an earlier unit E (an op's reachable code or a whole file), once what anyone may use
is taken out of both, the score is |C & E| / min(|C|, |E|): a copy padded with new code still holds all of E, and a
copy of part of E is still mostly E. Against a template, the starting point `hotfloat new` hands every author, it is
|C & E| / |C|: a kernel that keeps the template as its fallback is not a copy of it; one made of it is. Both sides
need FLOOR fingerprints left to be judged at all: below that a unit is the slot's reference computation or close to
it, which independent authors write alike (docs/copies.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..record import Record
from .fingerprint import Fingerprints

THRESHOLD = 0.5
"""A candidate unit holding at least this share of an earlier unit (or made of it) is a copy: in the measured table
(docs/copies.md) honest pairs reach 0.17 at most and transformed copies 0.69 at least."""
FLOOR = 12
"""Fingerprints each side needs, after the common code is taken out, to be judged."""


class Match(Record):
    """How close one earlier bundle (or reference work) comes to the candidate."""

    of: str
    """The earlier bundle's identity, or `reference:<work>/<file>` for code the project ships."""
    unit: str
    """The candidate's unit: `op <slot:variant>` or `file <path>`."""
    theirs: str
    """The earlier bundle's unit it matched, in the same form."""
    shared: int
    """Fingerprints the two units share, once the common code is taken out."""
    mine: int
    their_size: int
    score: float
    """shared / min(mine, their_size), or shared / mine against a template."""

    @property
    def judged(self) -> bool:
        """Both units keep enough code to tell a copy from a coincidence."""
        return min(self.mine, self.their_size) >= FLOOR

    @property
    def is_copy(self) -> bool:
        return self.judged and self.score >= THRESHOLD


@dataclass(frozen=True)
class Earlier:
    """A bundle judged before the candidate, or a work of the reference library."""

    name: str
    fingerprints: Fingerprints
    starting_point: bool = False
    """A template: only a candidate made of it is a copy, not one that holds it."""


def _units(fp: Fingerprints, common: frozenset[int]) -> dict[str, frozenset[int]]:
    """Each op and file as its set of fingerprints with the common code taken out; identical units kept once."""
    out: dict[str, frozenset[int]] = {}
    seen: set[frozenset[int]] = set()
    for kind, units in (("op", fp.ops), ("file", fp.files)):
        for name, fps in units.items():
            unit = frozenset(fps) - common
            if unit and (kind, unit) not in seen:
                seen.add((kind, unit))
                out[f"{kind} {name}"] = unit
    return out


def closest(candidate: Fingerprints, earlier: Earlier, common: frozenset[int]) -> Match | None:
    """The pair of units (op against op, file against file) that makes the strongest case, judged pairs first; None
    when no pair shares anything. Shared counts come from an index of the earlier units, so the cost is the candidate's size times how
    many earlier units hold each of its fingerprints, never the product of the unit counts."""
    theirs = _units(earlier.fingerprints, common)
    index: dict[tuple[str, int], list[str]] = {}
    for other, e in theirs.items():
        for f in e:
            index.setdefault((other.split(" ")[0], f), []).append(other)
    best = None
    for unit, c in _units(candidate, common).items():
        kind = unit.split(" ")[0]
        hits = Counter(other for f in c for other in index.get((kind, f), ()))
        for other, shared in hits.items():
            e = theirs[other]
            score = shared / (len(c) if earlier.starting_point else min(len(c), len(e)))
            m = Match(
                of=earlier.name,
                unit=unit,
                theirs=other,
                shared=shared,
                mine=len(c),
                their_size=len(e),
                score=round(score, 4),
            )
            if best is None or strength(m) > strength(best):
                best = m
    return best


def strength(m: Match) -> tuple:
    """How strong a case a match makes: copies first, then judged ones, the score, ops before files, the shared code."""
    return (m.is_copy, m.judged, m.score, m.unit.startswith("op "), m.shared)
