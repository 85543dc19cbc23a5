"""verify: runs a bundle's kernels in sandboxed children and judges their outputs against trusted references.

Public API: `verify_bundle(bundle, VerifyOptions(...), on_row=None) -> VerifyReport`. Reusable pieces: `wire` (the tensor
codec: raw bytes behind a validated header, no pickle), `ChildSession` (the child launcher speaking it with
deadlines), and `hotfloat.sandbox` (namespaces, rlimits, cgroups).
"""

from importlib import import_module

from .records import VerifyOptions, VerifyReport, VerifyRow

_LAZY = {
    "wire": None,
    "ChildFault": "launcher",
    "ChildSession": "launcher",
    "applies": "gates",
    "device_arch": "runner",
    "verify_bundle": "runner",
}
"""Names loaded on first use: the records alone (what the validator's ledger and the CLI read) must not pull the
verifier, and through it torch, into every process."""


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(f"{__name__}.{_LAZY[name] or name}")
    return module if _LAZY[name] is None else getattr(module, name)


__all__ = [
    "ChildFault",
    "ChildSession",
    "VerifyOptions",
    "VerifyReport",
    "VerifyRow",
    "applies",
    "device_arch",
    "verify_bundle",
    "wire",
]
