"""Undoing indirection before hashing: the bundle's own functions spliced into their callers, and temporaries read
once put back into the expression that reads them.

A copier can move any expression into a wrapper function (`def ld(*a, **k): return tl.load(*a, **k)`), move
statements into a helper, or split every expression into temporaries; each changes the subtrees the fingerprints are
made of without changing what runs. Undone here on both sides of every comparison, the original and the copy come
back to one form. Launches (`kernel[grid](...)`) are not calls of the function and are left alone.

Statement lists recurse only as deep as blocks nest; expressions are walked without recursion. Copying code is
recursive (`copy.deepcopy`): code too deep to copy is not inlined, and scan refuses such a file anyway.
"""

from __future__ import annotations

import ast
import copy
import itertools

from ..scan.report import resolve_import
from .normalize import imports

ROUNDS = 3
"""Wrappers of wrappers are undone this many levels deep."""
MAX_NODES = 50_000
"""Inlining stops growing a file past this many nodes (a helper called twice that calls a helper twice ...); the
examples are 300 to 2,000 nodes each."""
STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")

Key = tuple[str, str]
"""(file, function name)."""


def inline_bundle(trees: dict[str, ast.Module]) -> None:
    """Rewrites the trees in place: calls of the bundle's top-level functions spliced in, then single-use temporaries
    substituted, in every function."""
    defs = {(p, s.name): s for p, t in trees.items() for s in t.body if isinstance(s, ast.FunctionDef)}
    counter = itertools.count()
    splicers = {
        p: _Splicer(_callees(p, t, frozenset(trees), defs), defs, counter, MAX_NODES - _size(t))
        for p, t in trees.items()
    }
    for _ in range(ROUNDS):
        changed = False
        for path, tree in trees.items():
            splicer = splicers[path]
            splicer.changed = False
            for fn in (s for s in tree.body if isinstance(s, ast.FunctionDef)):
                fn.body = splicer.block(fn.body, fn)
            changed |= splicer.changed
        if not changed:
            break
    for tree in trees.values():
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            substitute_temporaries(fn)
        for call in [n for n in ast.walk(tree) if isinstance(n, ast.Call)]:
            _spread(call)


def _spread(call: ast.Call) -> None:
    """`f(*(a, b), **{"k": v})`, what forwarding `*args, **kwargs` through a wrapper leaves, is `f(a, b, k=v)`."""
    args: list[ast.expr] = []
    for a in call.args:
        spread = isinstance(a, ast.Starred) and isinstance(a.value, (ast.Tuple, ast.List))
        args.extend(a.value.elts if spread else [a])
    keywords: list[ast.keyword] = []
    for k in call.keywords:
        d = k.value
        if k.arg is None and isinstance(d, ast.Dict) and all(isinstance(x, ast.Constant) for x in d.keys):
            keywords.extend(ast.keyword(arg=str(x.value), value=v) for x, v in zip(d.keys, d.values, strict=True))
        else:
            keywords.append(k)
    call.args, call.keywords = args, keywords


def _size(tree: ast.AST) -> int:
    return sum(1 for _ in ast.walk(tree))


def _callees(path: str, tree: ast.Module, files: frozenset[str], defs: dict[Key, ast.FunctionDef]) -> dict[str, Key]:
    """What a called name or `module.name` stands for in this file: a top-level function of the bundle."""
    out: dict[str, Key] = {name: (p, name) for p, name in defs if p == path}
    for alias, (module, member) in imports(tree)[1].items():
        rel = module + ("." if module.strip(".") else "") + (member or "")
        for target in resolve_import(path, rel, files):
            if (target, member) in defs:
                out[alias] = (target, member)
            else:
                out.update({f"{alias}.{n}": (p, n) for p, n in defs if p == target})
    return out


class _Splicer:
    """Inlines the calls of one file's functions, block by block, within a budget of nodes."""

    def __init__(self, callees: dict[str, Key], defs: dict[Key, ast.FunctionDef], counter, budget: int):
        self.callees, self.defs, self.counter, self.budget = callees, defs, counter, budget
        self.changed = False

    def _target(self, call: ast.AST, caller: ast.FunctionDef) -> ast.FunctionDef | None:
        if not isinstance(call, ast.Call) or self.budget <= 0:
            return None
        f = call.func
        if isinstance(f, ast.Name):
            name = f.id
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            name = f"{f.value.id}.{f.attr}"
        else:
            return None
        fn = self.defs.get(self.callees.get(name, ("", "")))
        if fn is None or fn is caller or not fn.body or _returns_early(fn):
            return None
        return None if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn)) else fn

    def block(self, body: list[ast.stmt], caller: ast.FunctionDef) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in body:
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in STATEMENT_LISTS[:3]:
                    if isinstance(getattr(s, field, None), list):
                        setattr(s, field, self.block(getattr(s, field), caller))
                for h in (*getattr(s, "handlers", ()), *getattr(s, "cases", ())):
                    h.body = self.block(h.body, caller)
            value = s.value if isinstance(s, (ast.Expr, ast.Assign, ast.Return)) else None
            fn = self._target(value, caller)
            spliced = self._splice(fn, value) if fn is not None else None
            if spliced is None:
                self._expressions(s, caller)
                out.append(s)
                continue
            prelude, result = spliced
            out.extend(prelude)
            if isinstance(s, ast.Assign) and result is not None:
                out.append(ast.Assign(targets=s.targets, value=result))
            elif isinstance(s, ast.Return):
                out.append(ast.Return(value=result))
            elif result is not None:
                out.append(ast.Expr(value=result))
        return out

    def _expressions(self, s: ast.stmt, caller: ast.FunctionDef) -> None:
        """Calls inside this statement's own expressions (not its blocks) of functions that are one `return`,
        replaced by the returned expression with the arguments in place of the parameters."""
        roots = [v for f, v in ast.iter_fields(s) if f not in STATEMENT_LISTS]
        nodes = [s] + [
            n for r in roots for x in (r if isinstance(r, list) else [r]) if isinstance(x, ast.AST) for n in ast.walk(x)
        ]
        for node in nodes:
            for field, value in ast.iter_fields(node):
                if node is s and field in STATEMENT_LISTS:
                    continue
                items = value if isinstance(value, list) else [value]
                for i, item in enumerate(items):
                    fn = self._target(item, caller)
                    if fn is None or len(fn.body) != 1 or not isinstance(fn.body[0], ast.Return):
                        continue
                    result = self._expression(fn, item)
                    if result is None:
                        continue
                    if isinstance(value, list):
                        value[i] = result
                    else:
                        setattr(node, field, result)

    def _expression(self, fn: ast.FunctionDef, call: ast.Call) -> ast.expr | None:
        spliced = self._splice(fn, call)
        if spliced is None or spliced[1] is None:
            return None
        prelude, result = spliced
        values = {a.targets[0].id: a.value for a in prelude}
        holders = [(n, f, v) for n in ast.walk(result) for f, v in ast.iter_fields(n)]
        try:
            for node, field, value in holders:
                items = value if isinstance(value, list) else [value]
                for i, item in enumerate(items):
                    if isinstance(item, ast.Name) and item.id in values:
                        new = copy.deepcopy(values[item.id])
                        if isinstance(value, list):
                            value[i] = new
                        else:
                            setattr(node, field, new)
            if isinstance(result, ast.Name) and result.id in values:
                result = copy.deepcopy(values[result.id])
        except RecursionError:
            return None
        return result

    def _splice(self, fn: ast.FunctionDef, call: ast.Call) -> tuple[list[ast.Assign], ast.expr | None] | None:
        """(the statements binding the parameters, then the body; the returned expression), the callee's names made
        unique to this call; None when the body cannot be copied or the call's arguments do not fit."""
        a = fn.args
        params = [p.arg for p in (*a.posonlyargs, *a.args)]
        too_many = len(call.args) > len(params) and not a.vararg
        if too_many or any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
            return None
        try:
            body = copy.deepcopy([s for s in fn.body if not _docstring(s)])
        except RecursionError:
            return None
        self.budget -= sum(_size(s) for s in body)
        self.changed = True
        tag = f"__i{next(self.counter)}"
        kwonly = [p.arg for p in a.kwonlyargs]
        local = {*params, *kwonly, *(p.arg for p in (a.vararg, a.kwarg) if p)}
        local |= {
            n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        for s in body:
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and n.id in local:
                    n.id += tag
        given = {k.arg: k.value for k in call.keywords}
        defaults = dict(zip(params[len(params) - len(a.defaults) :], a.defaults, strict=True))
        defaults.update({p: d for p, d in zip(kwonly, a.kw_defaults, strict=True) if d is not None})
        values = dict(zip(params, call.args, strict=False))
        prelude = [_bind(p + tag, v) for p in [*params, *kwonly] if (v := values.get(p, given.get(p, defaults.get(p))))]
        if a.vararg:
            prelude.append(_bind(a.vararg.arg + tag, ast.Tuple(elts=call.args[len(params) :], ctx=ast.Load())))
        if a.kwarg:
            rest = {k: v for k, v in given.items() if k not in params and k not in kwonly}
            keys: list[ast.expr | None] = [ast.Constant(k) for k in rest]
            prelude.append(_bind(a.kwarg.arg + tag, ast.Dict(keys=keys, values=list(rest.values()))))
        result = body.pop().value if body and isinstance(body[-1], ast.Return) else None
        return prelude + body, result


def _bind(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


def _docstring(s: ast.stmt) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)


def _returns_early(fn: ast.FunctionDef) -> bool:
    """A return anywhere but as the last statement: the body cannot be spliced as straight-line code."""
    last = fn.body[-1]
    return any(isinstance(n, ast.Return) and n is not last for n in ast.walk(fn))


def substitute_temporaries(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """A local assigned once and read once is replaced by its value at the read, its assignment dropped: three-address
    code and the expression it was split from come back to one tree."""
    keep = {p.arg for p in ast.walk(fn.args) if isinstance(p, ast.arg)}
    stores: dict[str, list[ast.Name]] = {}
    loads: dict[str, list[ast.Name]] = {}
    parents: dict[int, tuple[ast.AST, str, int | None]] = {}
    for node in ast.walk(fn):
        for field, value in ast.iter_fields(node):
            for i, child in enumerate(value) if isinstance(value, list) else [(None, value)]:
                if isinstance(child, ast.AST):
                    parents[id(child)] = (node, field, i)
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            keep.update(node.names)
    for name, targets in stores.items():
        if name in keep or len(targets) != 1 or len(loads.get(name, ())) != 1:
            continue
        assign, field, _ = parents[id(targets[0])]
        if not (isinstance(assign, ast.Assign) and field == "targets" and len(assign.targets) == 1):
            continue
        read = loads[name][0]
        if _within(read, assign, parents):
            continue
        holder, read_field, k = parents[id(read)]
        if k is None:
            setattr(holder, read_field, assign.value)
        else:
            getattr(holder, read_field)[k] = assign.value
        block, block_field, _ = parents[id(assign)]
        getattr(block, block_field).remove(assign)
        parents[id(assign.value)] = (holder, read_field, k)


def _within(node: ast.AST, ancestor: ast.AST, parents: dict) -> bool:
    while id(node) in parents:
        node = parents[id(node)][0]
        if node is ancestor:
            return True
    return False
