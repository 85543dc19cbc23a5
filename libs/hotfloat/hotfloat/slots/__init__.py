"""Validator-owned slots: typed replacement boundaries with trusted references."""

from .registry import SLOTS, get_slot
from .spec import DTYPES, TOLERANCES, ArgSpec, Role, Shape, SlotSpec, Tolerance

__all__ = ["DTYPES", "SLOTS", "TOLERANCES", "ArgSpec", "Role", "Shape", "SlotSpec", "Tolerance", "get_slot"]
