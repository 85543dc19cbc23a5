"""Walks the installed torch, triton, cutlass, numpy and stdlib for what the scan's value rules rest on; run as a
script in a fresh interpreter by tests/scan/test_values.py, printing one JSON object.

- lib_names: every attribute name (dir() of the class, of its metaclass and of an instance) of every type an allowed
  call can return or a kernel is handed; `--write` stores them in hotfloat/scan/lib_names.txt.
- fs_paths / fs_values: every attribute of an allowed namespace (by path) and of those types (by owner.name) that
  reaches the file system, judged by its name, its parameters (path, file, fd, filename, ...) and its docstring.
- name_params: parameters of allowed callables that may take attribute names, field names or source text.
- hazards: allowed members, and VALUE_ATTRS on those types and members, that give a module, a metaclass, a namespace
  dict, a frame or code object, or a list/dict/set the library keeps between calls.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
import types
import warnings
from pathlib import Path

from lib_types import library_classes, optional, probed_names, value_types

warnings.simplefilter("ignore")

OUT = Path(__file__).resolve().parents[2] / "libs" / "hotfloat" / "hotfloat" / "scan" / "lib_names.txt"
FS_NAME = re.compile(
    r"(^|_)(file|files|filename|fd|path|save|load|dump|dumps|memmap|mmap|pickle|tofile|fromfile|open)(_|$)"
)
FS_PARAM = re.compile(r"^(path|file|fd|f|fid|filename|fname|file_name|filepath|dirname|dir|directory|fp|fileobj)$")
NAME_PARAM = re.compile(
    r"^(name|names|attr|attrs|attribute|assigned|updated|field_names|fields|typename|source|src|code|module|qualname|"
    r"globals|locals|namespace|fmt|format|key|keys|eval_str|expr|asm)$"
)
"""Parameters that may take attribute names, field names or source text as data."""
FS_DOC = re.compile(
    r"\b(file name|filename|file descriptor|file-like|file object|path to|pickle|to disk|from disk)\b", re.I
)


def allowed_members() -> dict[str, object]:
    """Every allowed namespace member that imports here, keyed by its dotted path."""
    from hotfloat.scan.policy import ALLOWED, MEMBERS

    out = {}
    for ns in ALLOWED:
        mod = optional(lambda: importlib.import_module(ns))
        for m in sorted(MEMBERS[ns]) if mod is not None else ():
            if hasattr(mod, m):
                out[f"{ns}.{m}"] = getattr(mod, m)
    return out


def names_of(value: object) -> set[str]:
    """dir() of the value, of its class and of the class's metaclass."""
    out: set[str] = set()
    for v in (value, type(value), type(type(value))):
        out |= set(optional(lambda v=v: dir(v)) or ())
    return out


def reaches_fs(name: str, value: object) -> bool:
    """A file-system sink by its name, a parameter that names a path or descriptor, or its docstring."""
    if FS_NAME.search(name):
        return True
    params = optional(lambda: inspect.signature(value).parameters) or {}
    if any(FS_PARAM.match(p) for p in params):
        return True
    doc = optional(lambda: inspect.getdoc(value)) or ""
    return bool(FS_DOC.search(doc.split("\n\n")[0] if callable(value) else ""))


def hazard(value: object) -> str | None:
    """What makes an attribute's value unsafe to hand to bundle code, or None."""
    if isinstance(value, types.ModuleType):
        return "a module"
    if isinstance(value, (types.FrameType, types.CodeType, types.TracebackType)):
        return "a frame, code or traceback object"
    if isinstance(value, type) and issubclass(value, type):
        return "a metaclass (builds classes from a namespace)"
    if isinstance(value, dict) and ("__builtins__" in value or "__name__" in value):
        return "a namespace dict"
    if isinstance(value, (dict, list, set, bytearray)) and len(value):
        return f"a {type(value).__name__} the library keeps"
    return None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def walk() -> dict[str, object]:
    """The derived lists: names, file-system sinks (namespace attributes by path, value attributes by name with their
    owner), and hazards among allowed members and VALUE_ATTRS."""
    from hotfloat.scan.policy import ALLOWED
    from hotfloat.scan.values import VALUE_ATTRS

    types_ = value_types()
    members = allowed_members()
    lib_names = probed_names()
    for v in types_ + list(members.values()) + library_classes():
        lib_names |= names_of(v)
    fs_paths, fs_values, hazards = set(), set(), set()
    for ns in ALLOWED:
        mod = importlib.import_module(ns)
        for name in dir(mod):
            if not _is_dunder(name) and reaches_fs(name, optional(lambda name=name: getattr(mod, name))):
                fs_paths.add(f"{ns}.{name}")
    for path, member in members.items():
        if why := hazard(member):
            hazards.add(f"{path}: {why}")
    for v in types_ + list(members.values()):
        owner = getattr(v, "__qualname__", None) or type(v).__qualname__
        for name in names_of(v) - {n for n in names_of(v) if _is_dunder(n)}:
            attr = optional(lambda name=name: getattr(v, name))
            if reaches_fs(name, attr):
                fs_values.add(f"{owner}.{name}")
            if name in VALUE_ATTRS and not callable(attr) and (why := hazard(attr)):
                hazards.add(f"{owner}.{name}: {why}")
    name_params = sorted(
        f"{path}({p})"
        for path, member in members.items()
        if callable(member)
        for p in (optional(lambda member=member: inspect.signature(member).parameters) or ())
        if NAME_PARAM.match(p)
    )
    return {
        "name_params": name_params,
        "lib_names": sorted(lib_names),
        "fs_paths": sorted(fs_paths),
        "fs_values": sorted(fs_values),
        "hazards": sorted(hazards),
    }


if __name__ == "__main__":
    result = walk()
    if sys.argv[1:] == ["--write"]:
        names = [n for n in result["lib_names"] if not _is_dunder(n)]
        OUT.write_text("".join(" ".join(names[i : i + 12]) + "\n" for i in range(0, len(names), 12)))
    print(json.dumps(result))
