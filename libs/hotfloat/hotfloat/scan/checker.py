"""The AST checker for one Python file of a bundle; it never imports or executes the file.

The file is read as the interpreter reads it (source.py), then every identifier the AST holds meets the name rules
(names.py). Module paths are resolved through the file's imports and aliases and pass only when every step is on
the allow-list (policy.ALLOWED); a module may only be followed by an attribute, read by a literal getattr or aliased,
so none reaches code the resolver cannot follow, and the members that turn names into code take one form each
(policy.RESTRICTED). Attributes of values pass only from VALUE_ATTRS or as names the bundle defines (values.py, settled
bundle-wide in report.py), global names only as allowed builtins or names the file binds (scope.py)."""

from __future__ import annotations

import ast

from . import names
from .constructs import BASES, REFUSED_NODES, defined_names, enum_body_problem, format_problem, pure_names
from .constructs import evaluated_as_code, namedtuple_fields, restricted_problem
from .findings import WHERE, FileScan, Finding
from .paths import Aliases, getattr_name, module_use_ok, resolve
from .policy import DENIED_ATTRS, MEMBERS, REEXPORTED_MODULES, RESTRICTED
from .scope import Scopes
from .source import decode
from .values import COMPARE_ONLY, VALUE_ATTRS

MAX_SOURCE_BYTES = 512 * 1024
__all__ = ["check_file", "resolve", "scan_source"]


def check_file(path: str, source: bytes) -> FileScan:
    """Checks one file; the value reads and stores it leaves pending are settled against the bundle's names."""
    if len(source) > MAX_SOURCE_BYTES:
        return FileScan((Finding(path, 1, f"file larger than {MAX_SOURCE_BYTES} bytes"),), ())
    text, why = decode(source)
    if why:
        return FileScan((Finding(path, 1, why),), ())
    try:
        tree = ast.parse(text, filename=path)
        checker = _Checker(path, tree)
    except SyntaxError as e:
        return FileScan((Finding(path, e.lineno or 1, f"syntax error: {e.msg}"),), ())
    except (RecursionError, MemoryError, ValueError):
        return FileScan((Finding(path, 1, "source too deeply nested to parse"),), ())
    try:
        checker.check(tree)
    except RecursionError:
        checker.flag(tree, "source too deeply nested to check")
    return checker.result()


def scan_source(path: str, source: bytes) -> FileScan:
    """Checks one file on its own: the names it defines and binds to modules are the whole bundle's."""
    scan = check_file(path, source)
    return scan.settle(path, scan.module_names, scan.defined)


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.findings: list[Finding] = []
        self.lines: set[int] = set()
        self.local_imports: list[str] = []
        self.value_reads: list[tuple[int, str]] = []
        self.pending: list[tuple[int, str, str]] = []
        self.imports_from: list[tuple[int, str, str, bool]] = []
        self.parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.scopes = Scopes(tree)
        self.defined = defined_names(tree, self.parents)
        self.classes, self.relative = pure_names(tree)
        self.relative_origin = {
            a.asname or a.name: ("." * n.level + (n.module or ""), a.name)
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.level
            for a in n.names
        }
        paths = Aliases(tree)
        self.aliases, self._path = paths.aliases, paths.path
        for node, why in paths.conflicts:
            self.flag(node, why)

    def result(self) -> FileScan:
        exports = frozenset(self.scopes.module_names)
        modules = frozenset(n for n, p in self.aliases.items() if resolve(p)[0] or p in RESTRICTED)
        return FileScan(
            tuple(self.findings),
            tuple(self.local_imports),
            modules,
            tuple(self.value_reads),
            tuple(self.pending),
            frozenset(self.defined),
            exports,
            frozenset(self.classes) & exports,
            tuple(self.imports_from),
        )

    def flag(self, node: ast.AST, reason: str) -> None:
        """Records one finding per line: the outermost construct explains it, inner repeats are noise."""
        line = getattr(node, "lineno", 1)
        if line not in self.lines:
            self.lines.add(line)
            self.findings.append(Finding(self.path, line, reason))

    def _member(self, node: ast.AST, path: str) -> None:
        """An expression standing for a module or a RESTRICTED member: where it may stand."""
        if resolve(path)[0]:
            if not module_use_ok(node, self.parents):
                why = f"a module may only be aliased (m = {path}) or followed by an attribute on the allow-list {WHERE}"
                self.flag(node, f"module {path} used as a value: {why}")
        elif path in RESTRICTED and (why := restricted_problem(node, RESTRICTED[path][0], self.parents)):
            self.flag(node, f"{path} {why}: {RESTRICTED[path][1]}")
        elif path == "collections.namedtuple" and isinstance(call := self.parents.get(node), ast.Call):
            self.defined |= set(namedtuple_fields(call))

    def _import(self, node: ast.AST, module: str, names_: list[str]) -> None:
        if module.split(".")[0] not in MEMBERS:
            return self.flag(
                node,
                f"import of {module!r} is not allowed: {module.split('.')[0]} is not on the "
                f"allow-list of what kernels may use {WHERE}",
            )
        for name in names_:
            if name == "*":
                self.flag(node, "star imports hide what is used")
            elif why := resolve(f"{module}.{name}" if name else module)[1]:
                self.flag(node, why)

    def check(self, tree: ast.AST) -> None:
        """Every identifier and refused construct in the tree first (a visitor may skip a node's children), then the
        rules of each construct."""
        for node in ast.walk(tree):
            for name, role in names.identifiers(node):
                if why := names.problem(name, role):
                    self.flag(node, why)
            if why := REFUSED_NODES.get(type(node).__name__):
                self.flag(node, why)
        self.visit(tree)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._import(node, a.name, [""])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if not node.level:
            return self._import(node, node.module or "", [a.name for a in node.names])
        rel = "." * node.level + (node.module or "")
        for a in node.names:
            if a.name == "*":
                self.flag(node, "star imports hide what is used")
            elif a.name.startswith("_"):
                self.flag(node, f"from {rel} import {a.name}: only public names of a bundle file may be imported")
            self.local_imports.append(rel + ("." if node.module else "") + a.name)
            self.value_reads.append((node.lineno, a.name))
            self.imports_from.append((node.lineno, rel, a.name, False))

    def _read(self, node: ast.AST, name: str) -> None:
        """One attribute read, `x.name` or `getattr(x, 'name')`: the allow-list on module paths, VALUE_ATTRS or the
        bundle's own names on values."""
        path = self._path(node)
        why = resolve(path)[1] if path else None
        if names.is_dunder(name):
            self._dunder(node, name)
        elif name in DENIED_ATTRS:
            self.flag(node, f".{name}: {DENIED_ATTRS[name]}")
        elif why:
            self.flag(node, why)
        elif name in REEXPORTED_MODULES:
            self.flag(node, f".{name}: reaches the {name} module, which bundle code may not import")
        elif path and resolve(path.rsplit(".", 1)[0])[0]:
            return self._member(node, path)
        elif name in ("format", "format_map"):
            value = node.value if isinstance(node, ast.Attribute) else None
            literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
            why = format_problem(value.value) if literal and name == "format" else "walks attributes named in data"
            if why:
                self.flag(node, f".{name} on a string: {why} (only a literal format string with plain fields)")
        elif name in COMPARE_ONLY:
            parent = self.parents.get(node)
            if not isinstance(parent, ast.Compare):
                self.flag(node, f".{name} only in a comparison: {COMPARE_ONLY[name]}")
        elif name not in VALUE_ATTRS:
            module = self._bundle_module(node)
            self.pending.append((node.lineno, name, f"read {module}" if module else "read"))
        self.value_reads.append((node.lineno, name))

    def _bundle_module(self, node: ast.AST) -> str | None:
        """The relative module path (".moe") when node reads an attribute of a name bound only by a relative import,
        which stands for a bundle file when one has that path: its attributes are what that file binds."""
        value = node.value if isinstance(node, ast.Attribute) else None
        if not (isinstance(value, ast.Name) and value.id in self.relative and value.id in self.relative_origin):
            return None
        rel, name = self.relative_origin[value.id]
        return rel + name if rel.strip(".") == "" else f"{rel}.{name}"

    def _dunder(self, node: ast.AST, name: str) -> None:
        """`fn.__name__` and `__doc__` are plain strings; `.__init__` only as `super().__init__(...)`."""
        call = node.value if isinstance(node, ast.Attribute) else None
        is_super = (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "super"
            and isinstance(self.parents.get(node), ast.Call)
            and self.parents[node].func is node
        )
        if name in ("__name__", "__doc__") or (name == "__init__" and is_super):
            return
        self.flag(node, f"dunder attribute access .{name} (introspection escape)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            if path := self._path(node):
                self.flag(node, f"assignment to {path}: monkey-patching a module")
            elif not names.is_dunder(node.attr):
                self.pending.append((node.lineno, node.attr, "store"))
        else:
            self._read(node, node.attr)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        parent = self.parents.get(node)
        called = isinstance(parent, ast.Call) and parent.func is node
        if node.id in ("getattr", "hasattr") and not called:
            self.flag(node, f"{node.id} passed as a value (dynamic attribute access the scan cannot check)")
        elif node.id == "super" and not (
            called
            and not parent.args
            and not parent.keywords
            and isinstance(attr := self.parents.get(parent), ast.Attribute)
            and attr.attr == "__init__"
        ):
            self.flag(node, "super only as super().__init__(...)")
        elif id(node) in self.scopes.global_loads:
            self._global(node, self.scopes.global_loads[id(node)])
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            self._member(node, self.aliases[node.id])

    def _global(self, node: ast.Name, klass: ast.ClassDef | None) -> None:
        """A load that may fall back to the builtins: an allowed builtin, or a name the module or class binds."""
        n = node.id
        if n in names.ALLOWED_BUILTINS or names.is_dunder(n):
            return
        if n in names.BUILTIN_NAMES:
            why = names.REFUSED_BUILTINS.get(n, "not on the allow-list of builtins kernels use")
            return self.flag(node, f"{n}(): {why}")
        local = self.scopes.class_names.get(id(klass), set()) if klass else set()
        if n not in self.scopes.module_names and n not in local:
            self.flag(node, f"{n} is neither defined in this file nor an allowed builtin")

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            name = getattr_name(node)
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                self.flag(node, f"{node.func.id}() with unpacked arguments")
            elif name is None:
                self.flag(node, f"{node.func.id}() with a computed name")
            elif name.startswith("_"):
                self.flag(node, f"{node.func.id}(..., {name!r}): private or dunder access")
            else:
                self._read(node, name)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if isinstance(v, str) and len(v) < 64 and names.is_dunder(v) and v not in names.ALLOWED_DUNDER_NAMES:
            self.flag(node, f"string {v!r} names a dunder (introspection escape)")
        if isinstance(v, str) and evaluated_as_code(node, self.parents, self._path):
            self._evaluated_string(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.keywords:
            self.flag(node, "class keywords (metaclass=...) build classes the scan cannot follow")
        for base in node.bases:
            path = self._path(base)
            if path in BASES:
                if path.startswith("enum.") and (why := enum_body_problem(node, self._path)):
                    self.flag(node, why)
            elif isinstance(base, ast.Name) and base.id in self.classes:
                continue
            elif isinstance(base, ast.Name) and base.id in self.relative and base.id in self.relative_origin:
                rel, name = self.relative_origin[base.id]
                self.imports_from.append((node.lineno, rel, name, True))
            else:
                self.flag(node, "class bases: only the bundle's own classes, enum.Enum/IntEnum and typing.NamedTuple")
        self.generic_visit(node)

    def _evaluated_string(self, const: ast.Constant) -> None:
        """Parses the string and checks it as an expression of the module."""
        try:
            sub = ast.parse(const.value.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return self.flag(const, "string annotation that does not parse as an expression")
        for n in ast.walk(sub):
            ast.copy_location(n, const)
            self.parents.update((c, n) for c in ast.iter_child_nodes(n))
            if isinstance(n, ast.Name):
                self.scopes.global_loads[id(n)] = None
        self.parents[sub] = const
        self.check(sub)
