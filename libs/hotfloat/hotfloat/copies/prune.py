"""Dead code a file proves dead by itself, dropped before hashing: statements after a return, branches on constants,
expression statements that call nothing, stores to locals nobody reads, nested functions nobody names, `pass`.

Statement lists recurse only as deep as Python's indentation limit allows blocks to nest; expressions are only walked
(`ast.walk`, no recursion). Code that may run stays, however unlikely: `if x.shape[0] < 0:` is not provably dead."""

from __future__ import annotations

import ast

TERMINAL = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def _has_effect(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)) for n in ast.walk(node))


def _truth(test: ast.expr) -> bool | None:
    """The value of a test the file decides by itself (`if False:`, `while 0:`, `if not True:`), else None."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and (inner := _truth(test.operand)) is not None:
        return not inner
    return None


def prune(body: list[ast.stmt], reads: set[str] | None = None) -> list[ast.stmt]:
    """The statements that can matter: no docstrings or `pass`, nothing after a return, constant branches resolved,
    no effect-free expressions; with `reads` (the names a function reads), no effect-free stores to other names and
    no nested definitions nobody names."""
    out: list[ast.stmt] = []
    for s in body:
        if isinstance(s, ast.If) and (truth := _truth(s.test)) is not None:
            out.extend(prune(s.body if truth else s.orelse, reads))
            continue
        if isinstance(s, ast.While) and _truth(s.test) is False:
            out.extend(prune(s.orelse, reads))
            continue
        if isinstance(s, (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            continue
        if isinstance(s, ast.Expr) and not _has_effect(s.value):
            continue
        if reads is not None and _dead_store(s, reads):
            continue
        for f in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, f, None), list) and not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                setattr(s, f, prune(getattr(s, f), reads))
        for h in (*getattr(s, "handlers", ()), *getattr(s, "cases", ())):
            h.body = prune(h.body, reads)
        out.append(s)
        if isinstance(s, TERMINAL):
            break
    return out


def _dead_store(s: ast.stmt, reads: set[str]) -> bool:
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return s.name not in reads
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        names = [n for t in targets for n in ast.walk(t)]
        only_names = all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.expr_context)) for n in names)
        stored = {n.id for n in names if isinstance(n, ast.Name)}
        return only_names and not (stored & reads) and not (s.value is not None and _has_effect(s.value))
    return False


def function_body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """A function's body pruned until nothing more goes: a dropped store can leave another store unread."""
    body, size = fn.body, _statements(fn.body)
    for _ in range(16):
        body = prune(body, reads_of(ast.Module(body=body, type_ignores=[])))
        before, size = size, _statements(body)
        if size == before:
            break
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn:
            node.body = prune(node.body)
    return body


def reads_of(node: ast.AST) -> set[str]:
    """Every name the code reads, and those it declares global or nonlocal (a store to them is never dead)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def _statements(body: list[ast.stmt]) -> int:
    return sum(isinstance(n, ast.stmt) for n in ast.walk(ast.Module(body=body, type_ignores=[])))
