"""What a file's scan finds: its findings and what the bundle-wide checks need from it (local imports, module names,
attribute reads), kept apart from the AST checker that produces them."""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    """Findings of one file, the bundle-local modules it imports (relative imports, as dotted paths), the names it
    binds to modules, and the attribute names it reads from values or imports from bundle files."""

    findings: tuple[Finding, ...]
    local_imports: tuple[str, ...]
    module_names: frozenset[str] = frozenset()
    value_reads: tuple[tuple[int, str], ...] = ()

    def refuse_module_reads(self, path: str, modules: frozenset[str]) -> FileScan:
        """Adds a finding where a value's attribute (or a name imported from a bundle file) is a name some file of the
        bundle binds to a module: `helpers.torch` is that module, out of the resolver's reach."""
        extra = {
            line: Finding(
                path,
                line,
                f".{name}: {name} is a module in a bundle file; import what a file uses in that file {WHERE}",
            )
            for line, name in reversed(self.value_reads)
            if name in modules
        }
        lines = {f.line for f in self.findings}
        return replace(self, findings=self.findings + tuple(f for n, f in sorted(extra.items()) if n not in lines))
