"""Checks of single constructs that need the node and its parents only: format strings, the one form each
RESTRICTED member may take, class statements, and the names a file defines for the value rules (values.py)."""

from __future__ import annotations

import ast
import string

from .ptx import asm_problem, constraints_problem
from .scope import bound

REFUSED_NODES = {
    "Match": "match statements read attributes by pattern names; use if/elif",
    "Yield": "generators (yield): a suspended generator's finally block runs whenever trusted code collects it",
    "YieldFrom": "generators (yield from): a suspended generator runs code whenever trusted code collects it",
    "Await": "async code defers work past the check",
    "AsyncFunctionDef": "async code defers work past the check",
    "AsyncFor": "async code defers work past the check",
    "AsyncWith": "async code defers work past the check",
}
"""Constructs kernels do not need that run bundle code outside its own calls or read attributes by data."""

BASES = frozenset({"enum.Enum", "enum.IntEnum", "typing.NamedTuple"})
"""The library classes a bundle class may derive from; every other base is a class of the bundle's own."""


def format_problem(template: str, depth: int = 0) -> str | None:
    """A format string may name arguments, never attributes or items of them (`{0.__globals__[os]}`)."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        return "format string that does not parse"
    for _, field, spec, _ in parts:
        if field and ("." in field or "[" in field):
            return f"format field {{{field}}} reads attributes or items of an argument"
        if spec and depth < 2 and (why := format_problem(spec, depth + 1)):
            return why
    return None


def _literal_strings(node: ast.AST | None) -> list[str] | None:
    """The strings of a literal str, or of a literal list/tuple of str; None for anything computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace(",", " ").split()
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]
    return None


def _argument(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    if index < len(call.args):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def restricted_problem(node: ast.AST, form: str, parents: dict) -> str | None:
    """Why this use of a RESTRICTED member is not its one allowed form, or None. An alias (`dc = dataclass`) passes;
    every use of the alias is checked the same way."""
    parent = parents.get(node)
    if isinstance(parent, ast.Assign) and parent.value is node and all(isinstance(t, ast.Name) for t in parent.targets):
        return None
    call = parent if isinstance(parent, ast.Call) and parent.func is node else None
    unpacked = call is not None and (
        any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    )
    holder = parents.get(call if call else node)
    if form == "base":
        return None if isinstance(parent, ast.ClassDef) and node in parent.bases else "used other than as a base"
    if form == "class decorator":
        if isinstance(parent, ast.ClassDef) and node in parent.decorator_list:
            return None
        ok = call and not call.args and not unpacked and all(isinstance(k.value, ast.Constant) for k in call.keywords)
        return None if ok and isinstance(holder, ast.ClassDef) and call in holder.decorator_list else "misused"
    if call is None or unpacked:
        return "used as a value or with unpacked arguments"
    if form == "def decorator":
        ok = len(call.args) == 1 and not call.keywords and isinstance(holder, ast.FunctionDef)
        return None if ok and call in holder.decorator_list else "misused"
    if form == "literal call":
        ok = _literal_strings(_argument(call, 0, "typename")) and _literal_strings(_argument(call, 1, "field_names"))
        return None if ok and {k.arg for k in call.keywords} <= {"typename", "field_names", "defaults"} else "misused"
    asm, constraints = _argument(call, 0, "asm"), _argument(call, 1, "constraints")
    if not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in (asm, constraints)):
        return "with a computed asm or constraints string"
    return asm_problem(asm.value) or constraints_problem(constraints.value)


def evaluated_as_code(node: ast.AST, parents: dict, path_of) -> bool:
    """A string that libraries may evaluate as code: in an annotation (CuTe's signature(eval_str=True)), inside a
    typing subscript or passed to a typing call (a ForwardRef get_type_hints evaluates); Literal and names aside."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Subscript) and child is parent.slice and (path := path_of(parent.value)):
            if path.startswith("typing."):
                return path != "typing.Literal"
        if isinstance(parent, ast.Call) and (path := path_of(parent.func)) and path.startswith("typing."):
            return not (path == "typing.TypeVar" and parent.args and child is parent.args[0])
        if child is getattr(parent, "annotation", None) or child is getattr(parent, "returns", None):
            return True
        child, parent = parent, parents.get(parent)
    return False


def namedtuple_fields(call: ast.Call) -> list[str]:
    """The field names of a checked namedtuple call (names the bundle defines)."""
    return _literal_strings(_argument(call, 1, "field_names")) or []


def enum_body_problem(node: ast.ClassDef, path) -> str | None:
    """An enum class holds literal members only (constants, tuples of them, enum.auto()): its hooks (_missing_,
    _generate_next_value_, ...) run inside trusted code, and one without members (a function value is a method, not
    a member) can be called with names to build a new class with any special method."""

    def literal(v: ast.AST | None) -> bool:
        if isinstance(v, ast.Tuple):
            return all(literal(e) for e in v.elts)
        return isinstance(v, ast.Constant) or (isinstance(v, ast.Call) and path(v.func) == "enum.auto" and not v.args)

    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    members = [s for s in body if isinstance(s, (ast.Assign, ast.AnnAssign)) and literal(s.value)]
    return (
        None if members and len(members) == len(body) else f"enum class {node.name}: literal members only, one at least"
    )


def defined_names(tree: ast.Module, parents: dict) -> set[str]:
    """Names the file defines for the value rules: module-level names, defs, class-body names and `self.x` stores."""
    names = bound(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= bound(node.body)
        if isinstance(node, ast.FunctionDef) and isinstance(parents.get(node), ast.ClassDef):
            first = [*node.args.posonlyargs, *node.args.args][:1]
            names |= {
                n.attr
                for n in ast.walk(node)
                if first
                and isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name)
                and n.value.id == first[0].arg
            }
    return names


def pure_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound only by class statements, names bound only by relative imports), anywhere in the file: a base
    class named so is the bundle's own class."""
    kinds: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            kinds.setdefault(node.name, set()).add("class")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kinds.setdefault(node.name, set()).add("other")
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                kinds.setdefault(a.asname or a.name, set()).add("relative" if node.level else "other")
        elif isinstance(node, ast.Import):
            for a in node.names:
                kinds.setdefault(a.asname or a.name.split(".")[0], set()).add("other")
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) or isinstance(node, ast.arg):
            kinds.setdefault(node.id if isinstance(node, ast.Name) else node.arg, set()).add("other")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            kinds.setdefault(node.name, set()).add("other")
    return {n for n, k in kinds.items() if k == {"class"}}, {n for n, k in kinds.items() if k == {"relative"}}
