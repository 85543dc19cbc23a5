"""What the modules of a package declare under one name: the slot and seam registries are one file per entry."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable


def declared(package: str, path: Iterable[str], name: str, kind: type, skip: frozenset[str] = frozenset()) -> list:
    """Every entry of `name` (a tuple) in each module of `package` found on `path`, by module name; modules whose name
    starts with "_" or is in `skip` are not imported. An entry that is not a `kind` is refused."""
    found = []
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in skip:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for entry in getattr(module, name, ()):
            if not isinstance(entry, kind):
                raise TypeError(f"{module.__name__}.{name} holds {type(entry).__name__}, not a {kind.__name__}")
            found.append(entry)
    return found
