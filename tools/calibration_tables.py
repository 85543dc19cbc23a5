"""Every number the docs quote about the committed H200 calibration and ladder files, regenerated from those files.

    python tools/calibration_tables.py            # rewrite the generated blocks of the docs
    python tools/calibration_tables.py --check    # exit 1 naming each block that differs (tests run this)

A block sits between `<!-- generated: NAME -->` and `<!-- /generated -->` in docs/qualification.md or
docs/device-runs.md; the prose around it quotes no number of its own about these files, so none can drift. Sources:
the raw collections and kept outputs in docs/qualify-runs/, the twin evidence there, the engine-noise table, and
docs/calibration-h200.json (itself reproduced from the raw files by tests/qualify/calibrate/test_analyse.py).
The tables are made in calibration_noise_tables.py, calibration_model_tables.py and calibration_ladder_tables.py,
from the files calibration_sources.py names.
"""

from __future__ import annotations

import re
import sys

from calibration_ladder_tables import examples, ladder, twin
from calibration_model_tables import influence, record
from calibration_noise_tables import collections, engine_noise, pairs, spread
from calibration_sources import ROOT

DOCS = [ROOT / "docs" / "qualification.md", ROOT / "docs" / "device-runs.md"]
BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)


BLOCKS = {
    "collections": collections,
    "spread": spread,
    "pairs": pairs,
    "record": record,
    "examples": examples,
    "twin": twin,
    "engine-noise": engine_noise,
    "ladder": ladder,
    "influence": influence,
}


def render(text: str, made: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + made[m.group(2)] + m.group(4), text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = {m.group(2) for doc in DOCS for m in BLOCK.finditer(doc.read_text())}
    if unknown := names - BLOCKS.keys():
        print(f"unknown generated blocks: {sorted(unknown)}", file=sys.stderr)
        return 1
    made = {n: BLOCKS[n]() for n in names}
    stale = []
    for doc in DOCS:
        old = doc.read_text()
        new = render(old, made)
        if new != old:
            stale += [f"{doc.name}: {m.group(2)}" for m in BLOCK.finditer(old) if m.group(3) != made[m.group(2)]]
            if not check:
                doc.write_text(new)
    if check and stale:
        print(
            "generated blocks differ from the committed files (python tools/calibration_tables.py rewrites them): "
            + ", ".join(stale),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
