"""The copy transforms of tools/copy_table.py that were in hand when the threshold was chosen: what a copier does to a
kernel it took, each a function of (python files, ops, rng) returning new (files, ops), or None when it does not
apply to that kernel. The held-out ones are in copy_held_out.py."""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from pathlib import Path

Files = dict[str, str]
Ops = list[tuple[str, str, str]]
"""(op key, source file, entry) per op."""


def parse_files(files: Files) -> dict[str, ast.Module]:
    return {p: ast.parse(s) for p, s in files.items()}


def emit_files(trees: dict[str, ast.Module]) -> Files:
    return {p: ast.unparse(ast.fix_missing_locations(t)) + "\n" for p, t in trees.items()}


def _entries(ops: Ops) -> set[str]:
    return {entry for _, _, entry in ops}


def rename(files: Files, ops: Ops, rng: random.Random):
    """Every name the bundle binds, parameters and import aliases included, to a fresh one (entries keep theirs:
    the manifest names them)."""
    trees = parse_files(files)
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
    return emit_files(fixed), ops


def reformat(files: Files, ops: Ops, rng: random.Random):
    """Laid out anew, comments and blank lines added, docstrings rewritten."""
    out = {}
    for p, s in emit_files(parse_files(files)).items():
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
    trees = parse_files(files)
    changed = False
    for t in trees.values():
        at = [i for i, s in enumerate(t.body) if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
        defs = [t.body[i] for i in at]
        shuffled = defs[::-1] if len(defs) > 1 else defs
        changed |= len(defs) > 1
        for i, s in zip(at, shuffled, strict=True):
            t.body[i] = s
    return (emit_files(trees), ops) if changed else None


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
    trees = parse_files(files)
    for t in trees.values():
        for fn in [n for n in ast.walk(t) if isinstance(n, ast.FunctionDef) and n.args.args]:
            block = ast.parse(DEAD_BLOCK.format(p=fn.args.args[0].arg)).body
            fn.body.insert(rng.randrange(len(fn.body) + 1), block[0])
        for n in range(2):
            t.body.insert(rng.randrange(len(t.body) + 1), ast.parse(DEAD_FN.format(n=n)).body[0])
        t.body.append(ast.parse(f"UNUSED_LIMIT = {rng.randrange(10, 99)}").body[0])
    return emit_files(trees), ops


def constants(files: Files, ops: Ops, rng: random.Random):
    """Every numeric constant above 1 changed (block sizes, warps, thresholds)."""
    trees = parse_files(files)
    changed = False
    for t in trees.values():
        for n in ast.walk(t):
            if isinstance(n, ast.Constant) and type(n.value) in (int, float) and n.value > 1:
                n.value = n.value * 2 if isinstance(n.value, int) else n.value * 1.5
                changed = True
    return (emit_files(trees), ops) if changed else None


def split(files: Files, ops: Ops, rng: random.Random):
    """Everything but the entries moved to a helper module beside each entry's file, imported back."""
    trees = parse_files(files)
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
    trees = parse_files(files)
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
    return (emit_files(trees), ops) if changed else None


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
