"""Module paths through a file's imports and aliases: what a name stands for, and whether each step of a dotted path is
on the allow-list (policy.ALLOWED). Past a member the steps are attributes of a value, which the value rules check."""

from __future__ import annotations

import ast

from .findings import WHERE
from .policy import MEMBERS, REEXPORTED_MODULES, RESTRICTED


def resolve(path: str) -> tuple[bool, str | None]:
    """(is an allowed namespace, why the path is refused or None). Every step must be a listed namespace or a member of
    the namespace before it; the steps after a member are attributes of a value, which get the value rules."""
    parts = path.split(".")
    ns = step = parts[0]
    for step in parts[1:] if ns in MEMBERS else ():
        if step in MEMBERS[ns] and f"{ns}.{step}" not in MEMBERS:
            return False, None
        ns = f"{ns}.{step}"
        if ns not in MEMBERS:
            break
    if ns in MEMBERS:
        return True, None
    if step in REEXPORTED_MODULES:
        return False, f"{path}: reaches the {step} module, which bundle code may not import"
    return False, f"{path}: private internals" if step.startswith("_") else (
        f"{path} is not on the allow-list of what kernels may use {WHERE}"
    )


def getattr_name(node: ast.AST) -> str | None:
    """The literal name of `getattr(x, 'name'[, default])` or `hasattr(x, 'name')`, or None for any other node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and 2 <= len(node.args) <= (3 if node.func.id == "getattr" else 2)
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def module_use_ok(node: ast.AST, parents: dict) -> bool:
    """A module may be followed by an attribute, read by a literal getattr, aliased or compared with `is`; any other
    use (argument, container, return, conditional, walrus, `==`, ...) would hand it to code the resolver cannot
    follow. `is` runs no code of either side, so `if cutlass is None` hands the module to nothing."""
    parent = parents.get(node)
    return (
        isinstance(parent, ast.Attribute)
        or (getattr_name(parent) is not None and parent.args[0] is node)
        or (
            isinstance(parent, ast.Assign)
            and parent.value is node
            and all(isinstance(t, ast.Name) for t in parent.targets)
        )
        or (isinstance(parent, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in parent.ops))
    )


class Aliases:
    """Local name -> allowed dotted path it stands for, bound anywhere in the file (a use before the binding runs after
    it); a name bound to a module or a RESTRICTED member anywhere stands for it everywhere, and for nothing else."""

    def __init__(self, tree: ast.AST) -> None:
        self.aliases: dict[str, str] = {}
        self.conflicts: list[tuple[ast.AST, str]] = []
        if all(self._bind(tree) for _ in range(8)):
            self.conflicts.append((tree, "aliases chained too deep to resolve"))

    def _bind(self, tree: ast.AST) -> bool:
        """One pass over the imports and plain assignments of allowed paths; True if it bound a new name."""
        new = False
        for node in ast.walk(tree):
            pairs = []
            if isinstance(node, ast.Import):
                pairs = [(a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2 for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                pairs = [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]
            elif isinstance(node, ast.Assign) and (path := self.path(node.value)):
                pairs = [(t.id, path) for t in node.targets if isinstance(t, ast.Name)]
            for name, path in pairs:
                is_module, why = resolve(path)
                old = self.aliases.get(name)
                if why or old == path:
                    continue
                if old and (resolve(old)[0] or old in RESTRICTED or is_module or path in RESTRICTED):
                    self.conflicts.append((node, f"{name} stands for both {old} and {path}; give each its own name"))
                    continue
                if not old:
                    self.aliases[name] = path
                    new = True
        return new

    def path(self, node: ast.AST) -> str | None:
        """Resolves Name(.attr | getattr(_, 'literal'))* through the aliases to a dotted path, or None."""
        attrs = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif (name := getattr_name(node)) is not None:
                attrs.append(name)
                node = node.args[0]
            else:
                break
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id], *reversed(attrs)])
        return None
