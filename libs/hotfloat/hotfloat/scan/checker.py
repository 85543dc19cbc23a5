"""The AST checker for one Python file of a bundle; it never imports or executes the file."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .policy import (
    ALLOWED_DUNDER_DEFS,
    ALLOWED_DUNDER_NAMES,
    ALLOWED_MODULES,
    DENIED_ATTRS,
    DENIED_BUILTINS,
    DENIED_PATHS,
    DENIED_PREFIX_FUNCS,
    REEXPORTED_MODULES,
)

MAX_SOURCE_BYTES = 512 * 1024


@dataclass(frozen=True)
class Finding:
    """One policy violation at file:line."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class FileScan:
    """Findings of one file and the bundle-local modules it imports (relative imports, as dotted paths)."""

    findings: tuple[Finding, ...]
    local_imports: tuple[str, ...]


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
    checker = _Checker(path)
    try:
        checker.visit(tree)
    except RecursionError:
        checker.flag(tree, "source too deeply nested to check")
    return FileScan(tuple(checker.findings), tuple(checker.local_imports))


def _denied_path(path: str) -> str | None:
    parts = path.split(".")
    for part in parts[1:]:
        if part in REEXPORTED_MODULES:
            return f"{path}: reaches the {part} module, which bundle code may not import"
    for denied, reason in DENIED_PATHS.items():
        d = denied.split(".")
        if parts[: len(d)] == d:
            return f"{denied}: {reason}"
    for prefix, reason in DENIED_PREFIX_FUNCS.items():
        if path.startswith(prefix) and path.count(".") == prefix.count("."):
            return f"{path}: {reason}"
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.findings: list[Finding] = []
        self.local_imports: list[str] = []
        self.aliases: dict[str, str] = {}
        """Local name -> dotted module path it stands for, so `import torch as t; t.load` is caught."""
        self.called: set[int] = set()
        """Name nodes that are the callee of a checked getattr() call (any other use of getattr is refused)."""

    def flag(self, node: ast.AST, reason: str) -> None:
        """Records one finding per line: the outermost construct explains it, inner repeats are noise."""
        line = getattr(node, "lineno", 1)
        if not any(f.line == line for f in self.findings):
            self.findings.append(Finding(self.path, line, reason))

    def _module(self, node: ast.AST, dotted: str) -> None:
        root = dotted.split(".")[0]
        if root not in ALLOWED_MODULES:
            self.flag(node, f"import of {dotted!r} is not allowed (allowed: {', '.join(sorted(ALLOWED_MODULES))})")
        elif why := _denied_path(dotted):
            self.flag(node, why)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._module(node, a.name)
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = node.module or ""
            for a in node.names:
                self.local_imports.append("." * node.level + (f"{base}.{a.name}" if base else a.name))
            if any(a.name == "*" for a in node.names):
                self.flag(node, "star imports hide what is used")
            return
        mod = node.module or ""
        self._module(node, mod)
        for a in node.names:
            if a.name == "*":
                self.flag(node, "star imports hide what is used")
                continue
            full = f"{mod}.{a.name}"
            if a.name.startswith("_") and a.name != "__future__" and mod != "__future__":
                self.flag(node, f"{full}: private internals")
            elif why := _denied_path(full):
                self.flag(node, why)
            self.aliases[a.asname or a.name] = full

    def _dotted(self, node: ast.AST) -> str | None:
        """Resolves Name(.attr)* through import aliases to a dotted path, or None."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id], *reversed(attrs)])
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDER_NAMES:
            self.flag(node, f"dunder attribute access .{name} (introspection escape)")
        elif name in DENIED_ATTRS:
            self.flag(node, f".{name}: {DENIED_ATTRS[name]}")
        elif name in REEXPORTED_MODULES:
            self.flag(node, f".{name}: reaches the {name} module, which bundle code may not import")
        else:
            dotted = self._dotted(node)
            if dotted:
                root = dotted.split(".")[0]
                if why := _denied_path(dotted):
                    self.flag(node, why)
                elif root in ("torch", "triton", "numpy", "cutlass") and name.startswith("_"):
                    self.flag(node, f"{dotted}: private internals")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self._dotted(node):
            self.flag(node, f"assignment to {self._dotted(node)}: monkey-patching a module")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "getattr" and id(node) not in self.called:
            self.flag(node, "getattr passed as a value (dynamic attribute access the scan cannot check)")
        elif node.id in DENIED_BUILTINS:
            self.flag(node, f"{node.id}(): {DENIED_BUILTINS[node.id]}")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDER_NAMES:
            self.flag(node, f"dunder name {node.id} (namespace escape)")

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "getattr":
            self.called.add(id(node.func))
            name = node.args[1] if len(node.args) > 1 else None
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                self.flag(node, "getattr() with unpacked arguments")
            elif not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.flag(node, "getattr() with a computed name")
            elif name.value.startswith("_"):
                self.flag(node, f"getattr(..., {name.value!r}): private or dunder access")
            elif name.value in DENIED_ATTRS:
                self.flag(node, f"getattr(..., {name.value!r}): {DENIED_ATTRS[name.value]}")
            elif name.value in REEXPORTED_MODULES:
                self.flag(node, f"getattr(..., {name.value!r}): reaches the {name.value} module, which bundle code "
                                "may not import")
            elif (target := self._dotted(node.args[0])) and (why := _denied_path(f"{target}.{name.value}")):
                self.flag(node, why)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if isinstance(v, str) and len(v) < 64 and v.startswith("__") and v.endswith("__") and v not in ALLOWED_DUNDER_NAMES:
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

    def visit_Assign(self, node: ast.Assign) -> None:
        dotted = self._dotted(node.value)
        if dotted:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.aliases[t.id] = dotted
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for n in node.names:
            if n.startswith("__"):
                self.flag(node, f"global {n} (namespace escape)")
