"""One Python file of a bundle as units of normalized code: what a copier cannot change without rewriting the kernel.

Erased: every name the bundle binds (functions, parameters, locals, globals, import aliases: `F.silu` and
`torch.nn.functional.silu` are one path), formatting, comments, docstrings, annotations, numeric and string constant
values, the order of keyword arguments, the order of a bundle function's arguments (a bundle call's arguments are
sorted), the operand order of commutative operators and comparisons, `a += b` against `a = a + b`, and dead code the
file itself proves dead (statements after a return, branches on constants, stores to locals nobody reads, expression
statements that call nothing, unused nested functions). What stays is the shape of the computation and the library
calls it makes.

Each subtree of the normalized code with at least `MIN_NODES` nodes is one fingerprint (a Merkle hash over its
children), so a copy that splits an expression into temporaries, inlines a helper or adds code keeps most of them.
Expressions are hashed without recursion (an expression may be as deep as the parser allows); statements recurse
only as deep as Python's indentation limit.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from dataclasses import dataclass, field

from .prune import function_body, prune, reads_of

MIN_NODES = 3
"""Smaller subtrees (`x.shape`, a lone call of a name) are in every kernel and say nothing about who wrote it; the
common ones of at least this size are taken out by the library (`library.GENERIC_WORKS`). Chosen with the table in
docs/copies.md: 3, 4 and 5 separate it alike, 3 leaves small kernels the most fingerprints."""
MAX_SOURCE_BYTES = 512 * 1024
"""Scan refuses larger files (`scan.checker.MAX_SOURCE_BYTES`); they never run, so they are not fingerprinted."""
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitOr, ast.BitAnd, ast.BitXor)
SYMMETRIC = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
FLIPPED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}
SKIPPED = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
BUILTINS = frozenset(dir(builtins))


@dataclass
class Unit:
    """A top-level definition (or a file's other top-level statements, named ""): its fingerprints and the names it
    reads, through which an op's code is followed from its entry."""

    fingerprints: set[int] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)


@dataclass
class Normalized:
    """A file's units by name and where its names come from: `external` maps a name to the library path it stands
    for, `local` to the bundle module a relative import names and the member it takes (None for the module)."""

    units: dict[str, Unit]
    external: dict[str, str]
    local: dict[str, tuple[str, str | None]]


def _h(label: str, kids: list[int]) -> int:
    d = hashlib.blake2b(label.encode(), digest_size=8)
    for k in kids:
        d.update(k.to_bytes(8, "little"))
    return int.from_bytes(d.digest(), "little")


def parse(source: bytes) -> ast.Module | None:
    """The file's tree, or None for what scan refuses before anything runs (too large, not UTF-8, not Python)."""
    if len(source) > MAX_SOURCE_BYTES:
        return None
    try:
        return ast.parse(source.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def imports(tree: ast.Module) -> tuple[dict[str, str], dict[str, tuple[str, str | None]]]:
    """(name -> external dotted path, name -> (relative module, member)) for every import in the file."""
    external: dict[str, str] = {}
    local: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                external[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if node.level:
                    local[a.asname or a.name] = ("." * node.level + (node.module or ""), a.name)
                elif node.module:
                    external[a.asname or a.name] = f"{node.module}.{a.name}"
    return external, local


class Hasher:
    """Fingerprints one file's statements; `defined` holds the attribute names the bundle itself defines (erased
    like any name it binds)."""

    def __init__(self, tree: ast.Module, defined: frozenset[str]):
        self.external, self.local = imports(tree)
        self.defined = defined
        self.bound: set[str] = set()
        """Names the file binds: a builtin's name among them is the file's own."""
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                self.bound.add(n.id)
            elif isinstance(n, ast.arg):
                self.bound.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(n.name)
        self.out: set[int] = set()

    # Expressions, without recursion -----------------------------------------------------------------------------

    def _path(self, node: ast.expr) -> str | None:
        """The library path a name or attribute chain stands for (`F.silu` -> torch.nn.functional.silu)."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.external and node.id not in self.local:
            return ".".join([self.external[node.id], *reversed(attrs)])
        return None

    def _leaf(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in self.external:
                return "@" + self.external[node.id]
            return f"${node.id}" if node.id in BUILTINS and node.id not in self.bound else "V"
        if isinstance(node, ast.Constant):
            v = node.value
            return "S" if isinstance(v, (str, bytes)) else "None" if v is None else "..." if v is ... else "K"
        if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            return "K"
        if isinstance(node, ast.JoinedStr):
            return "S"
        if isinstance(node, ast.Attribute) and (path := self._path(node)):
            return "@" + path
        if isinstance(node, ast.arg):
            return "arg"
        return None

    def _local_callee(self, func: ast.expr) -> bool:
        """A call of the bundle's own code (`f(...)`, `kernel[grid](...)`, `self.f(...)`), whose keywords and
        argument order the bundle chooses."""
        while isinstance(func, ast.Subscript):
            func = func.value
        if isinstance(func, ast.Name):
            return self._leaf(func) == "V"
        return isinstance(func, ast.Attribute) and func.attr in self.defined and not self._path(func)

    def _label(self, node: ast.AST, kids: list[int]) -> tuple[str, list[int]]:
        name = type(node).__name__
        if isinstance(node, ast.BinOp):
            op = type(node.op).__name__
            return (name + op, sorted(kids)) if isinstance(node.op, COMMUTATIVE) else (name + op, kids)
        if isinstance(node, ast.BoolOp):
            return name + type(node.op).__name__, sorted(kids)
        if isinstance(node, ast.UnaryOp):
            return name + type(node.op).__name__, kids
        if isinstance(node, ast.Compare):
            ops = [type(o) for o in node.ops]
            if len(ops) == 1 and ops[0] in FLIPPED:
                return name + FLIPPED[ops[0]].__name__, kids[::-1]
            if len(ops) == 1 and issubclass(ops[0], SYMMETRIC):
                return name + ops[0].__name__, sorted(kids)
            return name + "".join(o.__name__ for o in ops), kids
        if isinstance(node, ast.Attribute):
            return "." + ("V" if node.attr in self.defined else node.attr), kids
        if isinstance(node, ast.keyword):
            return "kw:" + (node.arg or "**"), kids
        if isinstance(node, ast.Call):
            if self._local_callee(node.func):
                return "LocalCall", [kids[0], *sorted(kids[1:])]
            n = len(node.args)
            return name, [*kids[: n + 1], *sorted(kids[n + 1 :])]
        if isinstance(node, ast.Dict):
            return name, sorted(_h("kv", [k, v]) for k, v in zip(kids[::2], kids[1::2], strict=True))
        if isinstance(node, ast.Set):
            return name, sorted(kids)
        if isinstance(node, ast.Lambda):
            return f"Lambda{len(node.args.args)}", kids
        return name, kids

    def _children(self, node: ast.AST) -> list[ast.AST]:
        if isinstance(node, ast.Call) and self._local_callee(node.func):
            return [node.func, *node.args, *(k.value for k in node.keywords)]
        if isinstance(node, ast.Dict):
            return [x for k, v in zip(node.keys, node.values, strict=True) for x in (k or ast.Constant("**"), v)]
        if isinstance(node, ast.Lambda):
            return [*node.args.defaults, node.body]
        return [c for c in ast.iter_child_nodes(node) if not isinstance(c, SKIPPED)]

    def expr(self, root: ast.AST | None) -> tuple[int, int]:
        """(hash, nodes) of an expression; every subtree of at least MIN_NODES nodes goes into the fingerprints.
        Post-order over an explicit stack: each node's children are listed once, and their results are the last ones
        on the value stack when the node is ready, in order (a node object met twice is simply hashed twice)."""
        if root is None:
            return _h("-", []), 1
        values: list[tuple[int, int]] = []
        stack: list[tuple[ast.AST, list[ast.AST] | None]] = [(root, None)]
        while stack:
            node, kids = stack.pop()
            if kids is None:
                if (leaf := self._leaf(node)) is not None:
                    values.append((_h(leaf, []), 1))
                    continue
                kids = self._children(node)
                stack.append((node, kids))
                stack.extend((c, None) for c in reversed(kids))
                continue
            done = values[len(values) - len(kids) :]
            del values[len(values) - len(kids) :]
            label, hashes = self._label(node, [k[0] for k in done])
            values.append(self._keep(_h(label, hashes), 1 + sum(k[1] for k in done)))
        return values[0]

    def _keep(self, h: int, nodes: int) -> tuple[int, int]:
        if nodes >= MIN_NODES:
            self.out.add(h)
        return h, nodes

    # Statements, recursing only as deep as blocks nest --------------------------------------------------------------

    def block(self, body: list[ast.stmt]) -> tuple[int, int]:
        parts = [self.stmt(s) for s in body]
        return _h("block", [p[0] for p in parts]), sum(p[1] for p in parts)

    def stmt(self, s: ast.stmt) -> tuple[int, int]:
        """(hash, nodes) of one statement, its expressions and blocks fingerprinted on the way."""
        if isinstance(s, ast.AugAssign):  # `a += b` is `a = a + b` (a node's context is not hashed: one node serves)
            s = ast.Assign(targets=[s.target], value=ast.BinOp(left=s.target, op=s.op, right=s.value))
        if isinstance(s, ast.AnnAssign):
            s = ast.Assign(targets=[s.target], value=s.value)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = s.args
            exprs = [*s.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None)]
            label = f"def{len(a.posonlyargs) + len(a.args)}:{len(a.kwonlyargs)}:{bool(a.vararg)}{bool(a.kwarg)}"
            return self._compound(label, exprs, [s.body])
        if isinstance(s, ast.ClassDef):
            return self._compound("class", [*s.decorator_list, *s.bases, *(k.value for k in s.keywords)], [s.body])
        if isinstance(s, ast.If) and s.orelse and isinstance(s.test, ast.UnaryOp) and isinstance(s.test.op, ast.Not):
            return self._compound("If", [s.test.operand], [s.orelse, s.body])
        blocks = [getattr(s, f) for f in ("body", "orelse", "finalbody") if getattr(s, f, None)]
        blocks += [h.body for h in (*getattr(s, "handlers", ()), *getattr(s, "cases", ()))]
        exprs = [c for c in ast.iter_child_nodes(s) if isinstance(c, (ast.expr, ast.withitem, ast.excepthandler))]
        exprs = [e.type if isinstance(e, ast.excepthandler) else e for e in exprs]
        return self._compound(type(s).__name__, exprs, blocks)

    def _compound(self, label: str, exprs: list[ast.AST | None], blocks: list[list[ast.stmt]]) -> tuple[int, int]:
        parts = [self.expr(e) for e in exprs] + [self.block(b) for b in blocks]
        return self._keep(_h(label, [p[0] for p in parts]), 1 + sum(p[1] for p in parts))


def defined_names(trees: list[ast.Module]) -> frozenset[str]:
    """Attribute names the bundle defines (its functions, classes, class members, attributes it stores): erased
    wherever they are read, as the bundle's own names are."""
    out = set()
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
                out.add(n.attr)
            if isinstance(n, ast.ClassDef):
                out.update(t.id for s in n.body for t in ast.walk(s) if isinstance(t, ast.Name))
    return frozenset(out)


def normalize(tree: ast.Module, defined: frozenset[str]) -> Normalized:
    """The file's units: each top-level function or class, each top-level store (under every name it binds), and
    the rest of its top-level statements under "" (they run whenever the file is imported)."""
    hasher = Hasher(tree, defined)
    units: dict[str, Unit] = {"": Unit()}
    for s in prune(tree.body):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            s.body = function_body(s)
        names = _binds(s)
        unit = Unit() if names else units[""]
        hasher.out = unit.fingerprints
        hasher.stmt(s)
        unit.reads |= reads_of(s)
        for name in names:
            units[name] = unit
    return Normalized(units, hasher.external, hasher.local)


def _binds(s: ast.stmt) -> list[str]:
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [s.name]
    if isinstance(s, (ast.Assign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []
