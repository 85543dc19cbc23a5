"""What a file's scan finds: its findings and what the bundle-wide checks need from it (local imports, module names,
value attributes left to settle, the names it defines and exports), kept apart from the AST checker that produces
them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .values import settle

WHERE = "(docs/security.md, 'Scan allow-list')"
"""Where every refusal sends the reader."""


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
    """Findings of one file and what the bundle-wide checks need from it."""

    findings: tuple[Finding, ...]
    local_imports: tuple[str, ...]
    """Bundle-local modules it imports (relative imports, as dotted paths)."""
    module_names: frozenset[str] = frozenset()
    """Names it binds to modules or RESTRICTED members (a name another file reads from it would arrive unchecked)."""
    value_reads: tuple[tuple[int, str], ...] = ()
    """(line, name) of attribute names read from values or imported from bundle files."""
    pending: tuple[tuple[int, str, str], ...] = ()
    """(line, name, "read" | "store") value attributes outside VALUE_ATTRS, settled against the bundle's names."""
    defined: frozenset[str] = frozenset()
    """Names it defines for the value rules (values.py)."""
    exports: frozenset[str] = frozenset()
    """Names it binds at module level: what `from .this import name` may name."""
    classes: frozenset[str] = frozenset()
    """Module-level names bound only by class statements: what a class of another file may derive from."""
    imports_from: tuple[tuple[int, str, str, bool], ...] = ()
    """(line, relative module, name, used as a base class) of every relative from-import."""

    def settle(
        self, path: str, modules: frozenset[str], defined: frozenset[str], exports: Callable = lambda rel: None
    ) -> FileScan:
        """Adds a finding where a value's attribute (or a name imported from a bundle file) is a name some file of the
        bundle binds to a module (`helpers.torch` is that module, out of the resolver's reach), where an attribute of
        a bundle module (exports(rel): the names that file binds, None if no file has that path) is not a public name
        the file binds, and where any other pending value attribute is neither in VALUE_ATTRS nor a name the bundle
        defines outside LIB_NAMES."""
        extra = {
            line: Finding(
                path,
                line,
                f".{name}: {name} is a module (or a restricted member) in a bundle file; import what a file uses in "
                f"that file {WHERE}",
            )
            for line, name in reversed(self.value_reads)
            if name in modules
        }
        for line, name, kind in self.pending:
            names = exports(kind.split()[1]) if kind.startswith("read ") else None
            if names is not None:
                why = (
                    None if name in names and not name.startswith("_") else f".{name}: not a public name of {kind[5:]}"
                )
            else:
                why = settle(name, kind.split()[0], defined, WHERE)
            if line not in extra and why:
                extra.setdefault(line, Finding(path, line, why))
        lines = {f.line for f in self.findings}
        added = tuple(f for n, f in sorted(extra.items()) if n not in lines)
        findings = tuple(sorted(self.findings + added, key=lambda f: f.line))
        return replace(self, findings=findings, pending=(), value_reads=())
