"""The AST checker for one Python file of a bundle; it never imports or executes the file.

Module paths are resolved through the file's imports and aliases and pass only when every step is on the allow-list
(policy.ALLOWED). An expression that stands for a module may only be followed by an attribute, read by a literal
getattr or aliased by a plain assignment, so no module object reaches code the resolver cannot follow; attributes of
other values get the name checks (dunders, DENIED_ATTRS, REEXPORTED_MODULES)."""

from __future__ import annotations

import ast

from .findings import WHERE, FileScan, Finding
from .policy import (
    ALLOWED_DUNDER_DEFS,
    ALLOWED_DUNDER_NAMES,
    DENIED_ATTRS,
    DENIED_BUILTINS,
    MEMBERS,
    REEXPORTED_MODULES,
)

MAX_SOURCE_BYTES = 512 * 1024


def resolve(path: str) -> tuple[bool, str | None]:
    """(is an allowed namespace, why the path is refused or None). Every step must be a listed namespace or a member of
    the namespace before it; the steps after a member are attributes of a value, which get the name checks only."""
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


def scan_source(path: str, source: bytes) -> FileScan:
    """Checks one file against the policy."""
    if len(source) > MAX_SOURCE_BYTES:
        return FileScan((Finding(path, 1, f"file larger than {MAX_SOURCE_BYTES} bytes"),), ())
    try:
        tree = ast.parse(source.decode("utf-8"), filename=path)
    except UnicodeDecodeError:
        return FileScan((Finding(path, 1, "not UTF-8"),), ())
    except SyntaxError as e:
        return FileScan((Finding(path, e.lineno or 1, f"syntax error: {e.msg}"),), ())
    except (RecursionError, MemoryError, ValueError):
        return FileScan((Finding(path, 1, "source too deeply nested to parse"),), ())
    checker = _Checker(path, tree)
    try:
        checker.visit(tree)
    except RecursionError:
        checker.flag(tree, "source too deeply nested to check")
    modules = frozenset(n for n, p in checker.aliases.items() if resolve(p)[0])
    scan = FileScan(tuple(checker.findings), tuple(checker.local_imports), modules, tuple(checker.value_reads))
    return scan.refuse_module_reads(path, modules)


def _getattr_name(node: ast.AST) -> str | None:
    """The literal name of `getattr(x, 'name'[, default])`, or None for any other node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and 2 <= len(node.args) <= 3
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.AST) -> None:
        self.path = path
        self.findings: list[Finding] = []
        self.lines: set[int] = set()
        self.local_imports: list[str] = []
        self.value_reads: list[tuple[int, str]] = []
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.called: set[int] = set()
        """Name nodes that are the callee of a checked getattr() call (any other use of getattr is refused)."""
        self.aliases: dict[str, str] = {}
        """Local name -> allowed dotted path it stands for, bound anywhere in the file (a use before the binding runs
        after it); a name bound to a module anywhere stands for that module everywhere."""
        if all(self._bind_aliases(tree) for _ in range(8)):
            self.flag(tree, "aliases chained too deep to resolve")

    def flag(self, node: ast.AST, reason: str) -> None:
        """Records one finding per line: the outermost construct explains it, inner repeats are noise."""
        line = getattr(node, "lineno", 1)
        if line not in self.lines:
            self.lines.add(line)
            self.findings.append(Finding(self.path, line, reason))

    def _bind_aliases(self, tree: ast.AST) -> bool:
        """One pass over the imports and plain assignments of allowed paths; True if it bound a new name."""
        new = False
        for node in ast.walk(tree):
            pairs = []
            if isinstance(node, ast.Import):
                pairs = [(a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2 for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                pairs = [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]
            elif isinstance(node, ast.Assign) and (path := self._path(node.value)):
                pairs = [(t.id, path) for t in node.targets if isinstance(t, ast.Name)]
            for name, path in pairs:
                is_module, why = resolve(path)
                old = self.aliases.get(name)
                if why or old == path or (old and not is_module):
                    continue
                if old and resolve(old)[0]:
                    self.flag(node, f"{name} stands for both {old} and {path}; give each module its own name")
                    continue
                self.aliases[name] = path
                new = True
        return new

    def _path(self, node: ast.AST) -> str | None:
        """Resolves Name(.attr | getattr(_, 'literal'))* through the aliases to a dotted path, or None."""
        attrs = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif (name := _getattr_name(node)) is not None:
                attrs.append(name)
                node = node.args[0]
            else:
                break
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id], *reversed(attrs)])
        return None

    def _module_value(self, node: ast.AST, path: str) -> None:
        """A module may be followed by an attribute, read by a literal getattr, aliased or compared with `is`; any
        other use (argument, container, return, conditional, walrus, `==`, ...) would hand it to code the resolver
        cannot follow."""
        parent = self.parents.get(node)
        if (
            isinstance(parent, ast.Attribute)
            or (_getattr_name(parent) is not None and parent.args[0] is node)
            or (
                isinstance(parent, ast.Assign)
                and parent.value is node
                and all(isinstance(t, ast.Name) for t in parent.targets)
            )
            or (isinstance(parent, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in parent.ops))
        ):
            return  # `is` runs no code of either side, so `if cutlass is None` hands the module to nothing
        self.flag(
            node,
            f"module {path} used as a value: a module may only be aliased (m = {path}) or followed by "
            f"an attribute on the allow-list {WHERE}",
        )

    def _import(self, node: ast.AST, module: str, names: list[str]) -> None:
        if module.split(".")[0] not in MEMBERS:
            return self.flag(
                node,
                f"import of {module!r} is not allowed: {module.split('.')[0]} is not on the "
                f"allow-list of what kernels may use {WHERE}",
            )
        for name in names:
            if name == "*":
                self.flag(node, "star imports hide what is used")
            elif why := resolve(f"{module}.{name}" if name else module)[1]:
                self.flag(node, why)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._import(node, a.name, [""])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if not node.level:
            return self._import(node, node.module or "", [a.name for a in node.names])
        base = node.module or ""
        for a in node.names:
            if a.name == "*":
                self.flag(node, "star imports hide what is used")
            self.local_imports.append("." * node.level + (f"{base}.{a.name}" if base else a.name))
            self.value_reads.append((node.lineno, a.name))

    def _read(self, node: ast.AST, name: str) -> None:
        """One attribute read, `x.name` or `getattr(x, 'name')`: the allow-list on module paths, names on values."""
        path = self._path(node)
        is_module, why = resolve(path) if path else (False, None)
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDER_NAMES:
            self.flag(node, f"dunder attribute access .{name} (introspection escape)")
        elif name in DENIED_ATTRS:
            self.flag(node, f".{name}: {DENIED_ATTRS[name]}")
        elif why:
            self.flag(node, why)
        elif name in REEXPORTED_MODULES:
            self.flag(node, f".{name}: reaches the {name} module, which bundle code may not import")
        elif is_module:
            self._module_value(node, path)
        elif path is None:
            self.value_reads.append((node.lineno, name))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)) and (path := self._path(node)):
            self.flag(node, f"assignment to {path}: monkey-patching a module")
        self._read(node, node.attr)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "getattr" and id(node) not in self.called:
            self.flag(node, "getattr passed as a value (dynamic attribute access the scan cannot check)")
        elif node.id in DENIED_BUILTINS:
            self.flag(node, f"{node.id}(): {DENIED_BUILTINS[node.id]}")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDER_NAMES:
            self.flag(node, f"dunder name {node.id} (namespace escape)")
        elif isinstance(node.ctx, ast.Load) and node.id in self.aliases and resolve(self.aliases[node.id])[0]:
            self._module_value(node, self.aliases[node.id])

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "getattr":
            self.called.add(id(node.func))
            name = _getattr_name(node)
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                self.flag(node, "getattr() with unpacked arguments")
            elif name is None:
                self.flag(node, "getattr() with a computed name")
            elif name.startswith("_"):
                self.flag(node, f"getattr(..., {name!r}): private or dunder access")
            else:
                self._read(node, name)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if (
            isinstance(v, str)
            and len(v) < 64
            and v.startswith("__")
            and v.endswith("__")
            and v not in ALLOWED_DUNDER_NAMES
        ):
            self.flag(node, f"string {v!r} names a dunder (introspection escape)")

    def _def(self, node) -> None:
        n = node.name
        if n.startswith("__") and n.endswith("__") and n not in ALLOWED_DUNDER_DEFS:
            self.flag(node, f"defines {n} (runs code at times the verifier does not control)")
        self.generic_visit(node)

    visit_FunctionDef = _def

    def visit_AsyncFunctionDef(self, node) -> None:
        self.flag(node, "async code defers work past the check")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for n in node.names:
            if n.startswith("__"):
                self.flag(node, f"global {n} (namespace escape)")
