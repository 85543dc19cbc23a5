"""The slot registry: every module of this package that defines `SPECS` contributes its slots, so a new slot is one
new file here. A name resolves to exactly one slot, or an error that lists the known ones."""

import importlib
import pkgutil
from pathlib import Path

from ..errors import UnknownSlotError
from .spec import SlotSpec

_NOT_SLOTS = frozenset({"registry", "share", "spec", "families"})
"""This package's own machinery (share reads the registry, so importing it here would be a circle)."""


def _discover() -> dict[str, SlotSpec]:
    found: dict[str, SlotSpec] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if info.name in _NOT_SLOTS or info.name.startswith("_"):
            continue
        for spec in getattr(importlib.import_module(f"{__package__}.{info.name}"), "SPECS", ()):
            if not isinstance(spec, SlotSpec):
                raise TypeError(f"hotfloat.slots.{info.name}.SPECS holds {type(spec).__name__}, not a SlotSpec")
            if spec.name in found:
                raise ValueError(f"slot {spec.name} is defined twice (hotfloat.slots.{info.name})")
            found[spec.name] = spec
    return dict(sorted(found.items()))


SLOTS: dict[str, SlotSpec] = _discover()


def get_slot(name: str) -> SlotSpec:
    """Resolves a slot name from untrusted input."""
    try:
        return SLOTS[name]
    except (KeyError, TypeError):
        raise UnknownSlotError(f"unknown slot {name!r}; known slots: {', '.join(sorted(SLOTS))}") from None
