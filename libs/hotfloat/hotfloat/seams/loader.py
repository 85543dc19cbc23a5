"""Importing an armed bundle's entry points inside the (sandboxed) engine process.

The files are written to a private directory first because JIT compilers such as Triton read a kernel's source
back through `inspect`, which needs real files; each bundle gets its own package name so two bundles never share
modules. Any failure raises: an engine must never quietly serve the stock path for a bundle it was told to arm.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.machinery
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..bundle import Bundle, Op
from .errors import SeamLoadError


def materialize(bundle: Bundle, parent: str | None = None) -> Path:
    """Writes the bundle's files to a fresh private directory and returns it; one made in the system temp folder is
    removed when the process exits (its modules stay imported until then)."""
    root = Path(tempfile.mkdtemp(prefix=f"hotfloat-armed-{bundle.identity[:12]}-", dir=parent))
    if parent is None:
        atexit.register(shutil.rmtree, root, True)
    for rel, data in bundle.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


_TYPE_NAME = type.__dict__["__name__"]


def load_entries(bundle: Bundle, root: Path) -> dict[str, Callable]:
    """Imports every op's entry function; returns them keyed by `slot:variant`."""
    package = f"_hotfloat_bundle_{bundle.identity[:16]}"
    if package not in sys.modules:
        importlib.invalidate_caches()
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        module = importlib.util.module_from_spec(spec)
        module.__path__ = [str(root)]
        sys.modules[package] = module
    return {op.key: _entry(package, op) for op in bundle.ops}


def _entry(package: str, op: Op) -> Callable:
    name = f"{package}.{op.entry.source.removesuffix('.py').replace('/', '.')}"
    try:
        module = importlib.import_module(name)
    except BaseException as e:  # candidate code: any failure, even SystemExit, is a failed arm
        # the type's name only, read through type's own slot: formatting the exception (str, repr, f"{e}") or a
        # metaclass's __name__ property would run candidate code here
        name = _TYPE_NAME.__get__(type(e), type)
        raise SeamLoadError(f"op {op.key}: importing {op.entry.source} failed: {name}") from None
    fn = getattr(module, op.entry.entry, None)
    if not callable(fn):
        raise SeamLoadError(f"op {op.key}: {op.entry.source} has no callable {op.entry.entry!r}")
    return fn
