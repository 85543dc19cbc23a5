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
import ast
import itertools
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Files = dict[str, str]
Ops = list[tuple[str, str, str]]
"""(op key, source file, entry) per op."""


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
        b = _bundle({k: v.encode() for k, v in bundle_files(slot, "t").items()})
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


# Transforms: each takes (files, ops, rng) and returns new (files, ops), or None when it does not apply ------------


def _trees(files: Files) -> dict[str, ast.Module]:
    return {p: ast.parse(s) for p, s in files.items()}


def _emit(trees: dict[str, ast.Module]) -> Files:
    return {p: ast.unparse(ast.fix_missing_locations(t)) + "\n" for p, t in trees.items()}


def _entries(ops: Ops) -> set[str]:
    return {entry for _, _, entry in ops}


def rename(files: Files, ops: Ops, rng: random.Random):
    """Every name the bundle binds, parameters and import aliases included, to a fresh one (entries keep theirs:
    the manifest names them)."""
    trees = _trees(files)
    bound: set[str] = set()
    for t in trees.values():
        for n in ast.walk(t):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                bound.add(n.name)
            elif isinstance(n, ast.arg):
                bound.add(n.arg)
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                bound.add(n.id)
            elif isinstance(n, ast.alias):
                bound.add(n.asname or n.name.split(".")[0])
    names = {b: f"n{rng.randrange(10**6)}_{i}" for i, b in enumerate(sorted(bound - _entries(ops)))}

    class Renamer(ast.NodeTransformer):
        def visit_alias(self, node):
            local = node.asname or node.name.split(".")[0]
            if local in names:
                node.asname = names[local] if node.asname or "." not in node.name else node.asname
                if node.asname is None:
                    node.asname = names[local]
            return node

        def visit_Name(self, node):
            node.id = names.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = names.get(node.arg, node.arg)
            return node

        def visit_FunctionDef(self, node):
            node.name = names.get(node.name, node.name)
            return self.generic_visit(node)

        visit_ClassDef = visit_FunctionDef

        def visit_Call(self, node):
            func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            if isinstance(func, ast.Name) and func.id in names:  # a bundle function: its keywords are its parameters
                for k in node.keywords:
                    k.arg = names.get(k.arg, k.arg)
            return self.generic_visit(node)

    fixed = {}
    for p, t in trees.items():
        for n in ast.walk(t):  # `import a.b` binds `a`; give the whole path an alias so the rename holds
            if isinstance(n, ast.Import):
                n.names = [ast.alias(a.name, a.asname or (a.name if "." not in a.name else None)) for a in n.names]
        fixed[p] = Renamer().visit(t)
    return _emit(fixed), ops


def reformat(files: Files, ops: Ops, rng: random.Random):
    """Laid out anew, comments and blank lines added, docstrings rewritten."""
    out = {}
    for p, s in _emit(_trees(files)).items():
        lines = []
        for line in s.splitlines():
            if rng.random() < 0.3:
                lines.append(" " * (len(line) - len(line.lstrip())) + f"# note {rng.randrange(999)}")
            lines.append(line)
            if line.strip() == "" or rng.random() < 0.1:
                lines.append("")
        out[p] = "\n".join(lines) + "\n"
    return out, ops


def reorder(files: Files, ops: Ops, rng: random.Random):
    """Top-level functions and classes in another order."""
    trees = _trees(files)
    changed = False
    for t in trees.values():
        at = [i for i, s in enumerate(t.body) if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
        defs = [t.body[i] for i in at]
        shuffled = defs[::-1] if len(defs) > 1 else defs
        changed |= len(defs) > 1
        for i, s in zip(at, shuffled, strict=True):
            t.body[i] = s
    return (_emit(trees), ops) if changed else None


DEAD_FN = """
def _unused_{n}(a, b, c=3):
    total = 0
    for i in range(a):
        if i % c == 0:
            total += b * i
        else:
            total -= i // c
    return [total, a + b, (total - a) * c]
"""
DEAD_BLOCK = "if len(str({p})) < 0:\n    junk = [k * 3 + 1 for k in range(7)]\n    junk.append(sum(junk) // 2)\n"


def dead(files: Files, ops: Ops, rng: random.Random):
    """Dead code: unused functions, unused module constants, and never-taken branches inside every function."""
    trees = _trees(files)
    for t in trees.values():
        for fn in [n for n in ast.walk(t) if isinstance(n, ast.FunctionDef) and n.args.args]:
            block = ast.parse(DEAD_BLOCK.format(p=fn.args.args[0].arg)).body
            fn.body.insert(rng.randrange(len(fn.body) + 1), block[0])
        for n in range(2):
            t.body.insert(rng.randrange(len(t.body) + 1), ast.parse(DEAD_FN.format(n=n)).body[0])
        t.body.append(ast.parse(f"UNUSED_LIMIT = {rng.randrange(10, 99)}").body[0])
    return _emit(trees), ops


def constants(files: Files, ops: Ops, rng: random.Random):
    """Every numeric constant above 1 changed (block sizes, warps, thresholds)."""
    trees = _trees(files)
    changed = False
    for t in trees.values():
        for n in ast.walk(t):
            if isinstance(n, ast.Constant) and type(n.value) in (int, float) and n.value > 1:
                n.value = n.value * 2 if isinstance(n.value, int) else n.value * 1.5
                changed = True
    return (_emit(trees), ops) if changed else None


def split(files: Files, ops: Ops, rng: random.Random):
    """Everything but the entries moved to a helper module beside each entry's file, imported back."""
    trees = _trees(files)
    out = dict(files)
    changed = False
    for path, t in trees.items():
        keep = [s for s in t.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        moved = [s for s in t.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        entries = [s for s in moved if isinstance(s, ast.FunctionDef) and s.name in _entries(ops)]
        moved = [s for s in moved if s not in entries]
        names = [n for s in moved for n in _binds(s)]
        if not names or not entries:
            continue
        changed = True
        helper = path.rsplit("/", 1)[0] + f"/_part{rng.randrange(100)}.py"
        out[helper] = ast.unparse(ast.Module(body=keep + moved, type_ignores=[])) + "\n"
        back = ast.ImportFrom(module=Path(helper).stem, names=[ast.alias(n) for n in names], level=1)
        out[path] = ast.unparse(ast.fix_missing_locations(ast.Module(body=keep + [back] + entries, type_ignores=[])))
    return (out, ops) if changed else None


def _binds(s: ast.stmt) -> list[str]:
    if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
        return [s.name]
    if isinstance(s, ast.Assign):
        return [n.id for t in s.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def inline(files: Files, ops: Ops, rng: random.Random):
    """Each call of a plain helper (no decorator, one return at the end) replaced by the helper's body."""
    trees = _trees(files)
    changed = False
    for t in trees.values():
        helpers = {
            s.name: s
            for s in t.body
            if isinstance(s, ast.FunctionDef)
            and not s.decorator_list
            and not s.args.vararg
            and not any(isinstance(n, ast.Return) for b in s.body[:-1] for n in ast.walk(b))
        }
        for k, fn in enumerate(n for n in ast.walk(t) if isinstance(n, ast.FunctionDef)):
            body = []
            for s in fn.body:
                call = s.value if isinstance(s, (ast.Expr, ast.Assign)) else None
                helper = (
                    helpers.get(call.func.id)
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    else None
                )
                if helper is None or helper is fn or call.keywords or len(call.args) > len(helper.args.args):
                    body.append(s)
                    continue
                changed = True
                body.extend(_inlined(helper, call, s, f"_i{k}"))
            fn.body = body
    return (_emit(trees), ops) if changed else None


def _inlined(helper: ast.FunctionDef, call: ast.Call, s: ast.stmt, tag: str) -> list[ast.stmt]:
    local = {a.arg for a in helper.args.args} | {
        n.id for n in ast.walk(helper) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    copy = ast.parse(ast.unparse(helper)).body[0]
    for n in ast.walk(copy):
        if isinstance(n, ast.Name) and n.id in local:
            n.id += tag
    params = [a.arg + tag for a in helper.args.args]
    defaults = dict(zip(params[len(params) - len(helper.args.defaults) :], helper.args.defaults, strict=True))
    args = dict(zip(params, call.args, strict=False))
    out = [ast.Assign([ast.Name(p, ast.Store())], args.get(p, defaults.get(p))) for p in params]
    body = [b for b in copy.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    ret = body.pop() if body and isinstance(body[-1], ast.Return) else None
    out += body
    if isinstance(s, ast.Assign) and ret is not None and ret.value is not None:
        out.append(ast.Assign(s.targets, ret.value))
    return out


def combined(files: Files, ops: Ops, rng: random.Random):
    """All of the above, one after another."""
    for step in (inline, constants, dead, split, reorder, rename, reformat):
        files, ops = step(files, ops, rng) or (files, ops)
    return files, ops


# Held out: written after the threshold was chosen ---------------------------------------------------------------


def temporaries(files: Files, ops: Ops, rng: random.Random):
    """Every nested call or arithmetic argument pulled out into a temporary first (three-address code)."""
    trees = _trees(files)
    count = itertools.count()
    for t in trees.values():
        for fn in [n for n in ast.walk(t) if isinstance(n, ast.FunctionDef)]:
            body = []
            for s in fn.body:
                if isinstance(s, (ast.Assign, ast.Expr, ast.Return)) and isinstance(s.value, ast.Call):
                    for i, a in enumerate(s.value.args):
                        if isinstance(a, (ast.Call, ast.BinOp)):
                            name = f"tmp{next(count)}"
                            body.append(ast.Assign([ast.Name(name, ast.Store())], a))
                            s.value.args[i] = ast.Name(name, ast.Load())
                body.append(s)
            fn.body = body
    return _emit(trees), ops


def commuted(files: Files, ops: Ops, rng: random.Random):
    """Operands of + and * swapped, comparisons mirrored, keyword arguments reversed."""
    trees = _trees(files)
    mirror = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
    for t in trees.values():
        for n in ast.walk(t):
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mult)):
                n.left, n.right = n.right, n.left
            elif isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in mirror:
                n.left, n.comparators, n.ops = n.comparators[0], [n.left], [mirror[type(n.ops[0])]()]
            elif isinstance(n, ast.Call):
                n.keywords.reverse()
    return _emit(trees), ops


def loops(files: Files, ops: Ops, rng: random.Random):
    """`for i in range(a, b)` loops rewritten as while loops."""
    trees = _trees(files)
    changed = False

    class Loops(ast.NodeTransformer):
        def visit_For(self, node):
            nonlocal changed
            self.generic_visit(node)
            it = node.iter
            if not (
                isinstance(node.target, ast.Name)
                and isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name)
                and it.func.id == "range"
                and len(it.args) in (1, 2)
                and not node.orelse
                and not any(isinstance(n, ast.Continue) for n in ast.walk(node))
            ):
                return node
            changed = True
            i = node.target.id
            start, stop = (ast.Constant(0), it.args[0]) if len(it.args) == 1 else it.args
            step = ast.AugAssign(ast.Name(i, ast.Store()), ast.Add(), ast.Constant(1))
            test = ast.Compare(ast.Name(i, ast.Load()), [ast.Lt()], [stop])
            return [ast.Assign([ast.Name(i, ast.Store())], start), ast.While(test, node.body + [step], [])]

    trees = {p: Loops().visit(t) for p, t in trees.items()}
    return (_emit(trees), ops) if changed else None


def padded(files: Files, ops: Ops, rng: random.Random):
    """Live-looking junk (never-taken branches on the inputs) grown to three times the code's own size."""
    trees = _trees(files)
    for t in trees.values():
        for fn in [n for n in ast.walk(t) if isinstance(n, ast.FunctionDef) and n.args.args]:
            p = fn.args.args[0].arg
            for _ in range(3 * len(fn.body)):
                junk = f"if len(str({p})) < {rng.randrange(-9, 0)}:\n    q{rng.randrange(99)} = {_junk(rng, p)}\n"
                fn.body.insert(rng.randrange(len(fn.body) + 1), ast.parse(junk).body[0])
    return _emit(trees), ops


def _junk(rng: random.Random, p: str) -> str:
    terms = [f"len(str({p}))", str(rng.randrange(2, 50)), f"abs({rng.randrange(-9, 9)})", "max(1, 2)"]
    return " + ".join(rng.choice(terms) + f" * {rng.randrange(2, 9)}" for _ in range(rng.randrange(2, 6)))


def outlined(files: Files, ops: Ops, rng: random.Random):
    """Every library call (`tl.load(...)`, `torch.empty(...)`) made through a one-line wrapper function of its own."""
    trees = _trees(files)
    changed = False
    for t in trees.values():
        wrappers: dict[str, str] = {}
        modules = {a.asname or a.name.split(".")[0] for n in ast.walk(t) if isinstance(n, ast.Import) for a in n.names}

        class Outline(ast.NodeTransformer):
            def visit_Call(self, node):
                nonlocal changed
                self.generic_visit(node)
                f = node.func
                if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules):
                    return node
                target = ast.unparse(node.func)
                name = wrappers.setdefault(target, f"_w{len(wrappers)}_{rng.randrange(999)}")
                changed = True
                return ast.Call(ast.Name(name, ast.Load()), node.args, node.keywords)

        for fn in [s for s in t.body if isinstance(s, ast.FunctionDef) and not s.decorator_list]:
            Outline().visit(fn)
        for target, name in wrappers.items():
            t.body.append(ast.parse(f"def {name}(*a, **k):\n    return {target}(*a, **k)\n").body[0])
    return (_emit(trees), ops) if changed else None


TRANSFORMS: dict[str, Callable] = {
    "renamed": rename,
    "reformatted": reformat,
    "reordered": reorder,
    "dead code added": dead,
    "constants tweaked": constants,
    "split across files": split,
    "helper inlined": inline,
    "all of these at once": combined,
}
HELD_OUT: dict[str, Callable] = {
    "temporaries (held out)": temporaries,
    "operands commuted (held out)": commuted,
    "for as while (held out)": loops,
    "junk x3 (held out)": padded,
    "calls outlined (held out)": outlined,
}


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
