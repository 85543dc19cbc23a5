"""The seam registry: every module of this package that defines `SEAMS` contributes its seams, so a new slot's hook is
one new file here. `python -m hotfloat_sglang.seams` prints the registry and its compat rows as JSON (compat runs it
in the engine venv, where SGLang and this package live)."""

from __future__ import annotations

from functools import cache

from hotfloat.discovery import declared
from hotfloat.slots import SLOTS

from ..seam import Seam


@cache
def registry() -> tuple[Seam, ...]:
    """Every seam, by module name; refuses a seam of an unknown slot, a slot hooked twice on one target, or a target
    hooked both AFTER and AROUND. One slot may have a seam per attention backend: an engine runs one of them."""
    seams = declared(__name__, __path__, "SEAMS", Seam)  # __main__, which prints the registry, is left out
    pairs = [(s, t) for seam in seams for s in seam.slots for t in seam.targets]
    unknown = sorted({s for s, _ in pairs} - set(SLOTS))
    twice = sorted({f"{s} on {t}" for s, t in pairs if pairs.count((s, t)) > 1})
    if unknown or twice:
        raise ValueError(f"seams: unknown slots {unknown}, slots hooked twice {twice}")
    modes = {}
    for seam in seams:
        for target in seam.targets:
            if modes.setdefault(target, seam.after) != seam.after:
                raise ValueError(f"seams: {target} is hooked both AFTER and AROUND")
    return tuple(seams)


def checks() -> list[dict]:
    """The compat rows of every seam, each once (seams that share a target share its rows); two different rows under
    one name are refused."""
    rows: dict[str, dict] = {}
    for seam in registry():
        for row in seam.checks:
            if rows.setdefault(row["name"], row) != row:
                raise ValueError(f"seams: two different compat rows are named {row['name']!r}")
    return list(rows.values())
