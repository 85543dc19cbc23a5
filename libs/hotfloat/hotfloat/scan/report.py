"""Scanning a whole bundle: every Python file is checked, the checks that need every file (module names, the names the
bundle defines, relative imports) are settled, and findings are attributed to the ops that reach them."""

from __future__ import annotations

from ..bundle import Bundle
from ..record import Record
from dataclasses import replace
from functools import partial

from .checker import check_file
from .findings import FileScan, Finding


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


def _module_files(importer: str, rel: str, files: set[str]) -> list[str]:
    """The bundle files a relative module path like "..pkg.mod" from kernels/a/b.py names (its .py or __init__.py)."""
    level = len(rel) - len(rel.lstrip("."))
    parts = importer.split("/")[:-1]
    if level - 1 > len(parts):
        return []
    stem = "/".join(parts[: len(parts) - (level - 1)] + (rel.lstrip(".").split(".") if rel.lstrip(".") else []))
    return [c for c in (f"{stem}.py", f"{stem}/__init__.py") if c in files]


def _exports(importer: str, scans: dict[str, FileScan], rel: str) -> frozenset[str] | None:
    """The names the bundle file at the relative module path binds, or None when no file has that path."""
    return next((scans[f].exports for f in _module_files(importer, rel, set(scans))), None)


def _imported_name(importer: str, imported: tuple[int, str, str, bool], scans: dict[str, FileScan]) -> Finding | None:
    """`from .m import n` reads n from the file m: it must be a module-level name m binds (or a module file), and a
    class statement's there when it is used as a base class."""
    line, rel, name, as_base = imported
    files = set(scans)
    sub = _module_files(importer, f"{rel}.{name}" if rel.strip(".") else rel + name, files)
    if sub and not as_base:
        return None
    for target in _module_files(importer, rel, files):
        if name in (scans[target].classes if as_base else scans[target].exports):
            return None
    what = "a class statement" if as_base else "a module-level name"
    return Finding(importer, line, f"from {rel} import {name}: not {what} of a bundle file")


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
    scans = {p: check_file(p, d) for p, d in py.items()}
    modules = frozenset().union(*(s.module_names for s in scans.values()))
    defined = frozenset().union(*(s.defined for s in scans.values()))
    names = set(py)
    for p, s in list(scans.items()):
        more = {f.line: f for i in reversed(s.imports_from) if (f := _imported_name(p, i, scans))}
        lines = {f.line for f in s.findings}
        s = replace(s, findings=s.findings + tuple(f for n, f in sorted(more.items()) if n not in lines))
        scans[p] = s.settle(p, modules, defined, partial(_exports, p, scans))
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
