"""The policy's re-export list against the installed packages: every module an allowed module re-exports that bundle
code may not import is refused under every name it is reachable by."""

import sys
import types

import pytest

from hotfloat.scan import scan_source
from hotfloat.scan.policy import ALLOWED_MODULES, DANGEROUS_MODULES, REEXPORTED_MODULES


def _reexports() -> dict[str, set[str]]:
    """attribute name -> dangerous module names it stands for, over every loaded module under an allowed root."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    for name in ALLOWED_MODULES - {"cutlass"}:
        __import__(name)
    found: dict[str, set[str]] = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in ALLOWED_MODULES:
            continue
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if isinstance(value, types.ModuleType) and not attr.startswith("_"):
                root = value.__name__.split(".")[0]
                if root not in ALLOWED_MODULES and root in DANGEROUS_MODULES:
                    found.setdefault(attr, set()).add(f"{name}.{attr} -> {value.__name__}")
    return found


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_every_dangerous_reexport_of_the_installed_packages_is_refused():
    found = _reexports()
    assert {"os", "sys", "builtins", "importlib", "ctypes"} <= set(found), "the walk found the known re-exports"
    missing = {attr: sorted(paths)[:3] for attr, paths in found.items() if attr not in REEXPORTED_MODULES}
    assert missing == {}


def test_each_reexport_name_is_flagged_in_attribute_chains_imports_and_getattr():
    for name in sorted(REEXPORTED_MODULES):
        for src in (f"import torch\nm = torch.{name}\n", f"from torch import {name}\n",
                    f"import torch\nm = getattr(torch, '{name}')\n"):
            findings = scan_source("kernels/k.py", src.encode()).findings
            assert any(f"{name} module" in f.reason for f in findings), (src, findings)
