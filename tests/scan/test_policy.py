"""The policy's re-export list against the installed packages: every module an allowed module re-exports that bundle
code may not import is refused under every name it is reachable by."""

import json
import subprocess
import sys

import pytest

from hotfloat.scan import scan_source
from hotfloat.scan.policy import REEXPORTED_MODULES


WALK = """
import json, sys, types, warnings
warnings.simplefilter("ignore")
from hotfloat.scan.policy import ALLOWED_MODULES, DANGEROUS_MODULES
for name in (*HEAVY, *sorted(ALLOWED_MODULES - {"cutlass"})):
    __import__(name)
found = {}
for name, module in list(sys.modules.items()):
    if module is None or name.split(".")[0] not in ALLOWED_MODULES:
        continue
    for attr, value in list(getattr(module, "__dict__", {}).items()):
        if isinstance(value, types.ModuleType) and attr.isidentifier() and not attr.startswith("_"):
            root = value.__name__.split(".")[0]
            if root not in ALLOWED_MODULES and root in DANGEROUS_MODULES:
                found.setdefault(attr, []).append(f"{name}.{attr} -> {value.__name__}")
print(json.dumps(found))
"""
HEAVY = ("numpy", "torch", "triton", "triton.language", "torch._dynamo", "torch._inductor.utils",
         "torch._inductor.cpp_builder", "torch.distributed.elastic.multiprocessing.api", "torch.utils.data", "torch.fx")
"""Submodules a kernel can import itself (and that other code loads into a serving process): walked too."""


def _reexports() -> dict[str, set[str]]:
    """attribute name -> dangerous module names it stands for, over every module under an allowed root that a fresh
    interpreter has loaded after importing the allowed packages and HEAVY (a fresh one, so the answer does not depend
    on what other tests imported)."""
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + WALK], capture_output=True, text=True,
                         check=True, timeout=300)
    return {attr: set(paths) for attr, paths in json.loads(out.stdout.strip().splitlines()[-1]).items()}


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
