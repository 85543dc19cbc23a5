"""The held-out copy transforms of tools/copy_table.py: written after the threshold was chosen, reported in the
table and never tuned on; the same shape as copy_transforms.py's."""

from __future__ import annotations

import ast
import itertools
import random
from collections.abc import Callable

from copy_transforms import Files, Ops, emit_files, parse_files


def temporaries(files: Files, ops: Ops, rng: random.Random):
    """Every nested call or arithmetic argument pulled out into a temporary first (three-address code)."""
    trees = parse_files(files)
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
    return emit_files(trees), ops


def commuted(files: Files, ops: Ops, rng: random.Random):
    """Operands of + and * swapped, comparisons mirrored, keyword arguments reversed."""
    trees = parse_files(files)
    mirror = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
    for t in trees.values():
        for n in ast.walk(t):
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mult)):
                n.left, n.right = n.right, n.left
            elif isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in mirror:
                n.left, n.comparators, n.ops = n.comparators[0], [n.left], [mirror[type(n.ops[0])]()]
            elif isinstance(n, ast.Call):
                n.keywords.reverse()
    return emit_files(trees), ops


def loops(files: Files, ops: Ops, rng: random.Random):
    """`for i in range(a, b)` loops rewritten as while loops."""
    trees = parse_files(files)
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
    return (emit_files(trees), ops) if changed else None


def padded(files: Files, ops: Ops, rng: random.Random):
    """Live-looking junk (never-taken branches on the inputs) grown to three times the code's own size."""
    trees = parse_files(files)
    for t in trees.values():
        for fn in [n for n in ast.walk(t) if isinstance(n, ast.FunctionDef) and n.args.args]:
            p = fn.args.args[0].arg
            for _ in range(3 * len(fn.body)):
                junk = f"if len(str({p})) < {rng.randrange(-9, 0)}:\n    q{rng.randrange(99)} = {_junk(rng, p)}\n"
                fn.body.insert(rng.randrange(len(fn.body) + 1), ast.parse(junk).body[0])
    return emit_files(trees), ops


def _junk(rng: random.Random, p: str) -> str:
    terms = [f"len(str({p}))", str(rng.randrange(2, 50)), f"abs({rng.randrange(-9, 9)})", "max(1, 2)"]
    return " + ".join(rng.choice(terms) + f" * {rng.randrange(2, 9)}" for _ in range(rng.randrange(2, 6)))


def outlined(files: Files, ops: Ops, rng: random.Random):
    """Every library call (`tl.load(...)`, `torch.empty(...)`) made through a one-line wrapper function of its own."""
    trees = parse_files(files)
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
    return (emit_files(trees), ops) if changed else None


HELD_OUT: dict[str, Callable] = {
    "temporaries (held out)": temporaries,
    "operands commuted (held out)": commuted,
    "for as while (held out)": loops,
    "junk x3 (held out)": padded,
    "calls outlined (held out)": outlined,
}
