"""Scanning a whole bundle: every Python file is checked, and findings are attributed to the ops that reach them."""

from __future__ import annotations

from ..bundle import Bundle
from ..record import Record
from .checker import scan_source
from .findings import Finding


class OpScan(Record):
    """Scan result of one op: the files it reaches through relative imports and their findings."""

    op: str
    """slot:variant, or "(unreferenced files)" for Python files no op imports."""
    files: list[str]
    findings: list[str]
    """Each "file:line: reason"."""

    @property
    def clean(self) -> bool:
        return not self.findings


class ScanReport(Record):
    """The static verdict on a bundle: clean only if every Python file in it is."""

    identity: str
    bundle_id: str
    ops: list[OpScan]

    @property
    def clean(self) -> bool:
        return all(o.clean for o in self.ops)


def resolve_import(importer: str, rel: str, files: set[str] | frozenset[str]) -> list[str]:
    """Maps a relative import like "..pkg.mod" from kernels/a/b.py to the bundle files it may name."""
    level = len(rel) - len(rel.lstrip("."))
    parts = importer.split("/")[:-1]
    if level - 1 > len(parts):
        return []
    base = parts[: len(parts) - (level - 1)]
    dotted = rel.lstrip(".").split(".") if rel.lstrip(".") else []
    out = []
    for cut in (len(dotted), len(dotted) - 1):  # `from .m import f` names m.py; `from . import m` names m.py too
        stem = "/".join(base + dotted[:cut]) if cut >= 0 else None
        for cand in (f"{stem}.py", f"{stem}/__init__.py"):
            if stem and cand in files:
                out.append(cand)
    return out


def scan_bundle(bundle: Bundle) -> ScanReport:
    """Checks every Python file once; an op is clean only if all files it reaches are. A name any file binds to a
    module may not be read from another file's values (`helpers.torch`), which the per-file resolver cannot see."""
    py = bundle.python_files()
    scans = {p: scan_source(p, d) for p, d in py.items()}
    modules = frozenset().union(*(s.module_names for s in scans.values()))
    scans = {p: s.refuse_module_reads(p, modules) for p, s in scans.items()}
    names = set(py)
    reached_by_any: set[str] = set()
    ops = []
    for op in bundle.ops:
        seen, todo = set(), [op.entry.source]
        while todo:
            f = todo.pop()
            if f in seen or f not in scans:
                continue
            seen.add(f)
            for rel in scans[f].local_imports:
                todo.extend(resolve_import(f, rel, names))
        reached_by_any |= seen
        ops.append(OpScan(op=op.key, files=sorted(seen), findings=_findings(scans, seen)))
    rest = sorted(names - reached_by_any)
    if rest:
        ops.append(OpScan(op="(unreferenced files)", files=rest, findings=_findings(scans, set(rest))))
    return ScanReport(identity=bundle.identity, bundle_id=bundle.manifest.bundle_id, ops=ops)


def _findings(scans, files) -> list[str]:
    return [str(f) for p in sorted(files) for f in scans[p].findings]


__all__ = ["Finding", "OpScan", "ScanReport", "scan_bundle"]
