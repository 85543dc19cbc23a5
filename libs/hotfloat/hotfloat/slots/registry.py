"""The slot registry: every module of this package that defines `SPECS` contributes its slots, so a new slot is one
new file here. A name resolves to exactly one slot, or an error that lists the known ones."""

from pathlib import Path

from ..discovery import declared
from ..errors import UnknownSlotError
from .spec import SlotSpec

_NOT_SLOTS = frozenset({"registry", "share", "spec", "families"})
"""This package's own machinery (share reads the registry, so importing it here would be a circle)."""


def _discover() -> dict[str, SlotSpec]:
    found: dict[str, SlotSpec] = {}
    for spec in declared(__package__, [str(Path(__file__).parent)], "SPECS", SlotSpec, _NOT_SLOTS):
        if spec.name in found:
            raise ValueError(f"slot {spec.name} is defined twice")
        found[spec.name] = spec
    return dict(sorted(found.items()))


SLOTS: dict[str, SlotSpec] = _discover()


def get_slot(name: str) -> SlotSpec:
    """Resolves a slot name from untrusted input."""
    try:
        return SLOTS[name]
    except (KeyError, TypeError):
        raise UnknownSlotError(f"unknown slot {name!r}; known slots: {', '.join(sorted(SLOTS))}") from None
