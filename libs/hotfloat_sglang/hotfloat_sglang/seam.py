"""One seam: where in the pinned SGLang a slot's calls are routed, declared as data the plugin and compat both read.

A seam module in `hotfloat_sglang.seams` defines `SEAMS`, a tuple of these; the registry finds it there, the plugin
hooks it without a branch of its own, and `hotfloat compat` checks its rows against the installed SGLang."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Seam:
    """A hook on SGLang for one or more slots."""

    slots: tuple[str, ...]
    """The slots the hook routes (each a `hotfloat.slots` name)."""
    targets: tuple[str, ...]
    """Dotted SGLang paths the hook is registered on (SGLang's HookRegistry)."""
    hook: Callable
    """hook(router) -> the function registered on every target."""
    after: bool = False
    """Registered AFTER the target (it wraps what the target built) instead of AROUND it."""
    always: bool = False
    """Hooked in every engine, also when no slot of it is routed, nudged or audited (else only then: hooking imports
    the target's SGLang module)."""
    checks: tuple[dict, ...] = field(default=())
    """Compat rows (hotfloat.compat.probe's format) for what the hook relies on: its targets' parameters, fields and
    dtypes at the pin."""
    backend: str | None = None
    """The attention backend whose class the hook lives on (SGLang's `attention_backend`): an engine that names
    another backend leaves it unhooked, and never imports it."""

    def wanted(self, hooked: set[str], every: bool = False, backend: str | None = None) -> bool:
        """Whether an engine whose router routes, nudges or audits `hooked`, on attention `backend` (None: not
        named), needs this seam."""
        if backend is not None and self.backend is not None and backend != self.backend:
            return False
        return every or self.always or bool(set(self.slots) & hooked)


def callable_check(name: str, target: str, params: list[str] | tuple[str, ...], order: bool = True) -> dict:
    """A compat row: `target` is callable with `params` (in this order when `order`)."""
    row = {"name": name, "kind": "callable", "target": target, "params": list(params)}
    return row | ({"order": True} if order else {})
