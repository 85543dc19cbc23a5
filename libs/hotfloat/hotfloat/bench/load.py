"""Loads a bundle's kernels into this process: bench is the miner's own tool, so their code runs here (verify never does)."""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..bundle import Bundle, Op, load_bundle, unpack
from ..errors import BundleError, InputError


class LoadedBundle:
    """A validated bundle and the entry function of each op built for this device, imported from files on disk
    (Triton reads kernel source). An op built for other architectures is never imported: it cannot run here, and a
    GPU kernel's module may need a GPU to import (bench then answers N/A, as verify does)."""

    def __init__(self, path: str, archs: set[str]):
        self.archs = archs
        p = Path(path)
        self._tmp = None
        if p.is_file():
            self.bundle = unpack(p.read_bytes())
            self._tmp = tempfile.TemporaryDirectory(prefix="hotfloat-bench-")
            root = Path(self._tmp.name)
            for rel, data in self.bundle.files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(data)
        elif p.is_dir():
            self.bundle, root = load_bundle(p), p
        else:
            raise InputError(f"{path}: no such bundle directory or archive")
        self.entries: dict[str, Callable] = {
            op.key: _import_entry(self.bundle, op, root)
            for op in self.bundle.ops
            if archs & set(op.entry.architectures)
        }

    def close(self) -> None:
        """Removes the extracted copy of an archive bundle."""
        if self._tmp is not None:
            self._tmp.cleanup()


def _import_entry(bundle: Bundle, op: Op, root: Path) -> Callable:
    """Imports the op's source under a name unique to the bundle identity, and returns its entry function."""
    name = f"hotfloat_bench_{bundle.identity[:12]}_{op.entry.source.replace('/', '_').removesuffix('.py')}"
    spec = importlib.util.spec_from_file_location(name, root / op.entry.source)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the miner's module failing to import is their bug, reported as bad input
        raise BundleError(f"op {op.key}: importing {op.entry.source} failed: {type(e).__name__}: {e}") from None
    fn = vars(module).get(op.entry.entry)
    if not callable(fn):
        raise BundleError(f"op {op.key}: {op.entry.source} has no function {op.entry.entry!r}")
    return fn
