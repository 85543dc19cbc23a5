"""Every identifier the AST holds, and the rules each one meets whatever construct holds it: a field the checker never
reads is a name it never checks (`case object(__builtins__=b)`, `dict(__del__=f)`, `from .m import __loader__`).

tests/scan/test_names.py reads each node class's grammar and fails on an identifier field missing from the table, so a
new Python release cannot add an unchecked one."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

from .policy import DENIED_ATTRS

IDENTIFIER_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "Name": (("id", "name"),),
    "Attribute": (("attr", "attr"),),
    "keyword": (("arg", "name"),),
    "alias": (("name", "module"), ("asname", "bind")),
    "ImportFrom": (("module", "module"),),
    "arg": (("arg", "bind"),),
    "FunctionDef": (("name", "def"),),
    "AsyncFunctionDef": (("name", "def"),),
    "ClassDef": (("name", "bind"),),
    "ExceptHandler": (("name", "bind"),),
    "Global": (("names", "bind"),),
    "Nonlocal": (("names", "bind"),),
    "MatchAs": (("name", "bind"),),
    "MatchStar": (("name", "bind"),),
    "MatchMapping": (("rest", "bind"),),
    "MatchClass": (("kwd_attrs", "attr"),),
    "TypeVar": (("name", "name"),),
    "ParamSpec": (("name", "name"),),
    "TypeVarTuple": (("name", "name"),),
}
"""AST class name -> (field, role) for every field of type `identifier` in Python's grammar. Roles: `module` (a dotted
import path), `def` (a function's name, where the dunder methods a class may define apply), `attr` (an attribute read
by name), `bind` (a name bound: a Name stored or deleted, a parameter, an `as` name), `name` (all others)."""

ALLOWED_DUNDER_NAMES = frozenset({"__name__", "__doc__", "__all__", "__init__"})
"""Dunders with no introspection power (`fn.__name__`, `__all__ = [...]`); `.__init__` only as `super().__init__`."""
ALLOWED_DUNDER_DEFS = frozenset({"__init__", "__call__", "__post_init__"})
"""The special methods a bundle class may define: each runs only when bundle code builds or calls the object. Others
(__del__, __str__, __eq__, __hash__, __iter__, __getattr__, ...) run whenever trusted code collects, formats, compares
or walks the object: a formatted exception ran bundle code inside the loader's error handling."""
ALLOWED_DUNDER_MODULES = frozenset({"__future__"})
ALLOWED_DUNDER_BINDS = frozenset({"__all__"})
"""The one dunder a bundle may bind: rebinding `__name__` or `__doc__` renames what trusted code reports and caches."""

ALLOWED_BUILTINS = frozenset(
    "abs all any bool dict divmod enumerate filter float frozenset getattr hasattr int isinstance iter len list map max "
    "min next pow range reversed round set slice sorted str sum super tuple zip ArithmeticError AssertionError "
    "AttributeError Exception ImportError IndexError KeyError ModuleNotFoundError NotImplementedError OverflowError "
    "RuntimeError TypeError ValueError ZeroDivisionError".split()
)
"""The builtins kernels use; any other builtin name is refused, including what `site` or a later Python adds. `getattr`
and `hasattr` take only a literal name, `super` only as `super().__init__(...)` (checker.py)."""
BUILTIN_NAMES = frozenset(dir(builtins)) | {"license", "credits", "copyright", "exit", "quit", "help"}
"""Names a module's global lookup falls back to (site's additions named in case this interpreter runs without site)."""
REFUSED_BUILTINS = {
    **dict.fromkeys(("eval", "exec", "compile", "__import__", "__build_class__"), "dynamic code"),
    **dict.fromkeys(("open", "input", "print", "license", "credits", "copyright", "help"), "files or standard streams"),
    **dict.fromkeys(("globals", "locals", "vars", "dir", "object"), "namespace escape"),
    **dict.fromkeys(("setattr", "delattr"), "attribute access by a runtime string"),
    **dict.fromkeys(("exit", "quit", "breakpoint"), "process control"),
    "type": "builds classes from a namespace (computed special methods)",
    "id": "object addresses (raw-memory tricks)",
    "memoryview": "raw memory views",
    "property": "code that runs on attribute reads",
    "classmethod": "reaches the class of a value",
    "staticmethod": "not needed by kernels",
}
"""Why the builtins authors most often reach for are refused; every other one not in ALLOWED_BUILTINS is refused too."""


def identifiers(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(identifier, role) for every identifier field of the node; a dotted module path gives each of its steps."""
    for field, role in IDENTIFIER_FIELDS.get(type(node).__name__, ()):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            role = "bind"
        value = getattr(node, field, None)
        for name in value if isinstance(value, list) else [value]:
            if isinstance(name, str):
                yield from ((step, role) for step in (name.split(".") if role == "module" else [name]))


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def problem(name: str, role: str) -> str | None:
    """Why this identifier is refused wherever it stands, or None."""
    if name.strip("_") == "":
        return None
    if role == "attr" and name in DENIED_ATTRS:
        return f".{name}: {DENIED_ATTRS[name]}"
    if is_dunder(name):
        allowed = {"def": ALLOWED_DUNDER_DEFS, "module": ALLOWED_DUNDER_MODULES, "bind": ALLOWED_DUNDER_BINDS}.get(
            role, ALLOWED_DUNDER_NAMES
        )
        if name in allowed:
            return None
        if role == "def":
            return f"defines {name} (runs code at times the verifier does not control)"
        if role == "attr":
            return f"dunder attribute access .{name} (introspection escape)"
        return f"dunder name {name} (namespace escape)"
    if name.startswith("__"):
        return (
            f"{name}: a name-mangled identifier is renamed at run time to what the scan cannot see; use one underscore"
        )
    if name.startswith("_") and name.endswith("_"):
        return f"{name}: a _sunder_ name is a hook libraries call (enum's _missing_, _value_repr_)"
    return None
