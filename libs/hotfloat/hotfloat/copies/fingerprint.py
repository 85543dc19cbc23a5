"""A bundle's code as fingerprint sets, per op (every unit its entry reaches, across files) and per whole file.

Per op, only the code the entry can reach counts: a definition no call path names is dead wherever it sits, so
padding a copy with unused functions or spreading it over helper files changes nothing. Per file, everything counts,
so a copied helper module is seen even when an op reaches only part of it.
"""

from __future__ import annotations

from ..bundle import Bundle
from ..errors import InputError
from ..record import Record
from ..scan.report import resolve_import
from .inline import inline_bundle
from .normalize import Normalized, defined_names, normalize, parse

MAX_FINGERPRINTS = 20_000
"""Most fingerprints a bundle's distinct units may hold together. The examples and templates hold 5 to 341 each; a
bundle past this is refused rather than compared, since comparing two such bundles costs their product."""
VERSION = 1
"""Changes whenever a fingerprint of the same code would change; stored fingerprints of another version are
recomputed."""


class Fingerprints(Record):
    """What a bundle's code is made of, for containment against other bundles and the reference library."""

    version: int = VERSION
    ops: dict[str, list[int]]
    """Op key (slot:variant) -> sorted fingerprints of every unit its entry reaches."""
    files: dict[str, list[int]]
    """Python file -> sorted fingerprints of all its units."""
    sources: dict[str, str]
    """Op key -> the file its entry is in, to name a copied op by its file."""


def fingerprint_files(files: dict[str, bytes], ops: list[tuple[str, str, str]]) -> Fingerprints:
    """`ops`: (key, source file, entry) of each op. Files that do not parse have no fingerprints (scan refuses them)."""
    trees = {p: t for p, d in sorted(files.items()) if p.endswith(".py") and (t := parse(d)) is not None}
    defined = defined_names(list(trees.values()))
    inline_bundle(trees)
    norm = {p: normalize(t, defined) for p, t in trees.items()}
    whole = {p: sorted(set().union(*(u.fingerprints for u in n.units.values()))) for p, n in norm.items()}
    fp = Fingerprints(
        ops={key: sorted(_reach(norm, src, entry)) for key, src, entry in ops},
        files=whole,
        sources={key: src for key, src, _ in ops},
    )
    if (n := size(fp)) > MAX_FINGERPRINTS:
        raise InputError(f"too much code to compare: {n} fingerprints, over the limit of {MAX_FINGERPRINTS}")
    return fp


def size(fp: Fingerprints) -> int:
    """Fingerprints over the bundle's distinct units (identical files count once): what comparing it costs."""
    return sum(len(u) for u in {tuple(u) for u in (*fp.ops.values(), *fp.files.values())})


def fingerprint(bundle: Bundle) -> Fingerprints:
    return fingerprint_files(bundle.files, [(op.key, op.entry.source, op.entry.entry) for op in bundle.ops])


def _reach(norm: dict[str, Normalized], source: str, entry: str) -> set[int]:
    """The fingerprints of every unit reachable from `entry` in `source`, following names through the file and
    through relative imports (`from .helpers import f`, `from . import helpers`) into other files."""
    found: set[int] = set()
    seen: set[tuple[str, str | None]] = set()
    todo: list[tuple[str, str | None]] = [(source, entry)]
    files = frozenset(norm)
    while todo:
        where, name = todo.pop()
        if (where, name) in seen or where not in norm:
            continue
        seen.add((where, name))
        n = norm[where]
        if name is None:  # a module the code names: all of it may be used
            todo.extend((where, u) for u in n.units)
            continue
        todo.append((where, ""))  # a file's top-level statements run when it is imported
        unit = n.units.get(name)
        if unit is None:
            continue
        found |= unit.fingerprints
        for read in unit.reads:
            if read in n.units:
                todo.append((where, read))
            elif read in n.local:
                module, member = n.local[read]
                rel = module + ("." if module.strip(".") else "") + (member or "")
                for target in resolve_import(where, rel, files):
                    todo.append((target, member if member in norm[target].units else None))
    return found
