"""The copy detector's measured table (docs/copies.md): honest pairs that must pass, transformed copies that must be
caught, and the scores the threshold was chosen from.

    .venv/bin/python tools/copy_table.py                   # print the table as docs/copies.md has it
    .venv/bin/python tools/copy_table.py --write-library   # rewrite hotfloat/copies/examples.json from examples/

Honest: every pair of independently written kernels for the same slot among the examples that pass verify (or
cannot be judged without a GPU), the
`hotfloat new` templates, the Cacheon-style bundles of tests/authoring/cacheon (through `hotfloat bundle import`) and
the demo's honest miner. Copies: each transform below applied to each source with code above the floor, judged
against its source as an earlier submission. The transforms marked held out were written after the threshold was
chosen and are reported, not tuned on. tests/copies/test_table.py recomputes all of it and compares with the docs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from copy_held_out import HELD_OUT
from copy_transforms import TRANSFORMS, Files, Ops


def _bundle(files: dict[str, bytes]):
    from hotfloat.bundle import bundle_from_files

    return bundle_from_files(files)


def _load(path: Path) -> tuple[Files, Ops]:
    from hotfloat.bundle import load_bundle

    b = load_bundle(path)
    py = {p: d.decode() for p, d in b.python_files().items()}
    return py, [(op.key, op.entry.source, op.entry.entry) for op in b.ops]


def honest_set() -> dict[str, tuple[str, Files, Ops]]:
    """name -> (slot, python files, ops) of every honest kernel in the table."""
    from hotfloat.authoring.cacheon import import_cacheon
    from hotfloat.authoring.template import BODIES, bundle_files
    from hotfloat.cli.miners import MINERS, bundle_of

    expected = (ROOT / "examples" / "expected.toml").read_text()
    passing = [line.split(" = ")[0] for line in expected.splitlines() if line.endswith(('"PASS"', '"NO_DECISION"'))]
    out = {}
    for name in passing:
        files, ops = _load(ROOT / "examples" / name)
        out[f"examples/{name}"] = (ops[0][0].split(":")[0], files, ops)
    for slot in sorted(BODIES):
        b = _bundle({k: v.encode() for k, v in bundle_files([slot], "t").items()})
        out[f"template/{slot}"] = (slot, {p: d.decode() for p, d in b.python_files().items()}, _ops(b))
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted((ROOT / "tests" / "authoring" / "cacheon").iterdir()):
            import_cacheon(str(src), f"{tmp}/{src.name}")
            files, ops = _load(Path(tmp) / src.name)
            for key, source, entry in ops:
                out[f"cacheon/{src.name}"] = (key.split(":")[0], files, [(key, source, entry)])
    honest = next(m for m in MINERS if m.name == "alice")
    b = _bundle(dict(_archive_files(bundle_of(honest)[1])))
    out["demo/alice"] = ("activation.silu_and_mul", {p: d.decode() for p, d in b.python_files().items()}, _ops(b))
    return out


def cacheon_set(checkout: Path) -> dict[str, tuple[str, Files, Ops]]:
    """The example bundles of a Cacheon checkout that `hotfloat bundle import` takes, one entry per op."""
    from hotfloat.authoring.cacheon import import_cacheon
    from hotfloat.errors import InputError

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted((checkout / "examples").iterdir()):
            try:
                import_cacheon(str(src), f"{tmp}/{src.name}")
            except InputError:
                continue  # refused at import (an override of a Cacheon-owned kernel): nothing to compare
            files, ops = _load(Path(tmp) / src.name)
            for key, source, entry in ops:
                out[f"cacheon-checkout/{src.name}"] = (key.split(":")[0], files, [(key, source, entry)])
    return out


def _ops(b) -> Ops:
    return [(op.key, op.entry.source, op.entry.entry) for op in b.ops]


def _archive_files(archive: bytes):
    from hotfloat.bundle.archive import read_archive

    return read_archive(archive).items()


# The table --------------------------------------------------------------------------------------------------------


def measure(seed: int = 51, extra: dict | None = None) -> dict:
    """Every honest pair's score and every transformed copy's, with the verdict under the committed threshold.
    Each is judged as a validator would: against a work of the library with the common code taken out, against
    anything else as an earlier submission with all of the library taken out."""
    from hotfloat.copies.containment import FLOOR, Earlier, closest
    from hotfloat.copies.fingerprint import fingerprint_files
    from hotfloat.copies.library import reference_library

    library = reference_library()
    honest = {**honest_set(), **(extra or {})}
    fps = {n: fingerprint_files(_b(f), o) for n, (_, f, o) in honest.items()}

    def against(candidate, name: str) -> dict:
        work = name in library.works
        common = library.generic if work else library.everything
        m = closest(candidate, Earlier(name, fps[name], name in library.templates), common)
        sizes = [_largest(candidate, common), _largest(fps[name], common)]
        return {
            "score": m.score if m else 0.0,
            "sizes": sizes,
            "judged": min(sizes) >= FLOOR,
            "copy": bool(m and m.is_copy),
        }

    pairs = []
    independent = [(a, b) for a, b in itertools.combinations(sorted(honest), 2) if not {a, b} <= set(extra or {})]
    for a, b in independent:  # an extra set is one author's: its own pairs are not independent
        if honest[a][0] == honest[b][0]:
            verdict = max(against(fps[b], a), against(fps[a], b), key=lambda v: (v["copy"], v["judged"], v["score"]))
            pairs.append({"slot": honest[a][0], "a": a, "b": b, **verdict})
    copies = []
    for name, (_, files, ops) in sorted(honest.items()):
        for label, transform in {**TRANSFORMS, **HELD_OUT}.items():
            made = transform(dict(files), list(ops), random.Random(f"{seed}:{name}:{label}"))
            if made is not None:
                verdict = against(fingerprint_files(_b(made[0]), made[1]), name)
                copies.append({"source": name, "transform": label, **verdict})
    return {"pairs": pairs, "copies": copies}


def _b(files: Files) -> dict[str, bytes]:
    return {p: s.encode() for p, s in files.items()}


def _largest(fp, common: frozenset[int]) -> int:
    """The most fingerprints any one unit keeps once the common code is out: below the floor, nothing is judged."""
    return max((len(set(u) - common) for u in (*fp.ops.values(), *fp.files.values())), default=0)


def markdown(result: dict) -> str:
    """The table as docs/copies.md holds it between its markers."""
    from hotfloat.copies.containment import FLOOR, THRESHOLD

    pairs, copies = result["pairs"], result["copies"]
    judged = [p for p in pairs if p["judged"]]
    fp = [p for p in pairs if p["copy"]]
    lines = [
        f"Threshold {THRESHOLD}, floor {FLOOR} fingerprints per side.",
        "",
        "**Honest pairs** (independent kernels for the same slot; must pass):",
        "",
        "| slot | pairs | judged (both sides over the floor) | highest score judged | refused as copies |",
        "|---|---|---|---|---|",
    ]
    for slot in sorted({p["slot"] for p in pairs}):
        rows = [p for p in pairs if p["slot"] == slot]
        top = max((p["score"] for p in rows if p["judged"]), default=None)
        n_judged = sum(p["judged"] for p in rows)
        lines.append(
            f"| `{slot}` | {len(rows)} | {n_judged} | {'-' if top is None else f'{top:.2f}'} | "
            f"{sum(p['copy'] for p in rows)} |"
        )
    top = max((p["score"] for p in judged), default=0.0)
    lines += [
        f"| all | {len(pairs)} | {len(judged)} | {top:.2f} | {len(fp)} |",
        "",
        f"False positives: {len(fp)} of {len(pairs)} honest pairs ({len(fp) / max(len(pairs), 1):.1%}).",
        "",
        "**Transformed copies** (each judged against its source as an earlier submission; must be caught):",
        "",
        "| transform | copies | of sources over the floor | caught | lowest score | below the floor |",
        "|---|---|---|---|---|---|",
    ]
    for label in [*TRANSFORMS, *HELD_OUT]:
        rows = [c for c in copies if c["transform"] == label]
        over = [c for c in rows if c["sizes"][1] >= FLOOR]
        low = min((c["score"] for c in over), default=None)
        lines.append(
            f"| {label} | {len(rows)} | {len(over)} | {sum(c['copy'] for c in over)} | "
            f"{'-' if low is None else f'{low:.2f}'} | {len(rows) - len(over)} |"
        )
    over = [c for c in copies if c["sizes"][1] >= FLOOR]
    missed = [c for c in over if not c["copy"]]
    low = min((c["score"] for c in over), default=0.0)
    works = [c for c in over if not c["source"].startswith("template/")]
    lost = [c for c in works if not c["copy"]]
    padded = [c for c in missed if c["source"].startswith("template/")]
    small = sorted({c["source"] for c in copies if c["sizes"][1] < FLOOR})
    lines += [
        f"| all | {len(copies)} | {len(over)} | {len(over) - len(missed)} | {low:.2f} | {len(copies) - len(over)} |",
        "",
        f"Lowest score of a copy of a kernel over the floor: {min((c['score'] for c in works), default=0):.2f}; "
        f"highest score of an honest pair judged: {max((p['score'] for p in judged), default=0):.2f}.",
        "",
        f"Missed: {len(lost)} of {len(works)} copies of kernels over the floor ({len(lost) / max(len(works), 1):.1%})"
        + "".join(f"; {c['source']} {c['transform']} at {c['score']:.2f}" for c in lost)
        + f". Templates are starting points (a kernel holding one is not its copy): {len(padded)} copies of templates "
        "grown with new code pass"
        + "".join(f"; {c['source']} {c['transform']} at {c['score']:.2f}" for c in padded)
        + ".",
        "",
        f"Sources below the floor (their copies are not judged, by design): {', '.join(small) or 'none'}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-library", action="store_true", help="rewrite hotfloat/copies/examples.json")
    parser.add_argument("--json", action="store_true", help="print every score as JSON")
    parser.add_argument("--cacheon", type=Path, help="also pair the examples of this Cacheon checkout with ours")
    args = parser.parse_args()
    if args.write_library:
        from hotfloat.copies.library import EXAMPLES, example_works

        works = example_works(ROOT / "examples")
        EXAMPLES.write_text(json.dumps({k: v.model_dump() for k, v in works.items()}, separators=(",", ":")) + "\n")
        print(f"wrote {EXAMPLES.relative_to(ROOT)}: {len(works)} example bundles")
        return
    result = measure(extra=cacheon_set(args.cacheon) if args.cacheon else None)
    print(json.dumps(result, indent=1) if args.json else markdown(result), end="")


if __name__ == "__main__":
    sys.exit(main())
