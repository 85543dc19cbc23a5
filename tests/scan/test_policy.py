"""The allow-list against the installed torch, triton, numpy, cutlass and stdlib: every listed member exists and is no
module, no listed member carries one, and every module an allowed namespace holds or re-exports is refused."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.scan import scan_source
from hotfloat.scan.checker import resolve
from hotfloat.scan.policy import ALLOWED, MEMBERS, REEXPORTED_MODULES

WALK = """
import importlib, json, types, warnings
warnings.simplefilter("ignore")
from hotfloat.scan.policy import ALLOWED, MEMBERS
out = {"not_namespaces": [], "missing": [], "modules": [], "carried": [], "held": []}
for ns in ALLOWED:
    mod = importlib.import_module(ns)
    if not isinstance(mod, types.ModuleType):
        out["not_namespaces"].append(ns)
    for m in sorted(MEMBERS[ns]):
        if not hasattr(mod, m):
            out["missing"].append(f"{ns}.{m}")
        elif isinstance(getattr(mod, m), types.ModuleType):
            out["modules"].append(f"{ns}.{m}")
        else:
            value = getattr(mod, m)
            for a in dir(value):
                try:
                    if not a.startswith("_") and isinstance(getattr(value, a), types.ModuleType):
                        out["carried"].append(f"{ns}.{m}.{a}")
                except Exception:
                    pass
    out["held"] += [f"{ns}.{a}" for a, v in vars(mod).items() if isinstance(v, types.ModuleType)]
print(json.dumps(out))
"""
DANGEROUS = (
    "os",
    "sys",
    "subprocess",
    "ctypes",
    "importlib",
    "socket",
    "threading",
    "signal",
    "multiprocessing",
    "builtins",
    "pickle",
    "io",
    "shutil",
    "inspect",
    "gc",
    "marshal",
    "pathlib",
    "tempfile",
    "time",
    "utils",
    "streams",
    "collect_env",
    "cpp_extension",
    "backends",
    "library",
    "ops",
    "hub",
    "runtime",
    "core",
    "lib",
    "ctypeslib",
    "memory",
    "graphs",
    "nvgpu",
    "pkgutil",
    "torch",
    "np",
    "random",
    "knobs",
)
"""Modules (and submodule names under the allowed roots) no path through an allowed namespace may reach."""


@pytest.fixture(scope="module")
def installed() -> dict[str, list[str]]:
    """The walk in a fresh interpreter, so the answer does not depend on what other tests imported."""
    out = subprocess.run([sys.executable, "-c", WALK], capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _refused(src: str) -> bool:
    return bool(scan_source("kernels/k.py", src.encode()).findings)


def test_every_allowed_member_exists_and_is_not_a_module(installed):
    assert installed["not_namespaces"] == [] and installed["missing"] == [] and installed["modules"] == []


def test_no_allowed_member_carries_a_module(installed):
    assert installed["carried"] == [], "a module behind an allowed member escapes the resolver"


def test_every_module_an_allowed_namespace_holds_is_refused_unless_it_is_a_namespace(installed):
    held = [p for p in installed["held"] if p not in MEMBERS]
    assert {
        "torch.utils",
        "torch.cuda.streams",
        "torch.nn.functional.torch",
        "triton.language.core",
        "triton.language.extra.pkgutil",
        "torch.os",
        "dataclasses.sys",
    } <= set(held)
    for path in held:
        ns, name = path.rsplit(".", 1)
        for src in (
            f"from {ns} import {name}\n",
            f"import {ns} as m\nx = m.{name}.anything\n",
            f"import {ns} as m\nx = getattr(m, '{name}')\n",
            f"import {path}\n",
        ):
            assert _refused(src), src


def test_every_path_to_a_dangerous_module_through_an_allowed_namespace_is_refused():
    for ns in ALLOWED:
        for name in DANGEROUS:
            if f"{ns}.{name}" in MEMBERS:
                continue
            assert resolve(f"{ns}.{name}")[1], f"{ns}.{name}"
            for src in (
                f"from {ns} import {name}\n",
                f"import {ns} as m\nx = m.{name}.x\n",
                f"import {ns}.{name}\n",
                f"import {ns} as m\nk = m\ny = k.{name}\n",
            ):
                assert _refused(src), src
    for path in (
        "torch.utils.collect_env.run",
        "torch.cuda.streams.Stream",
        "torch.Stream",
        "torch.cuda.Stream",
        "torch.nn.functional.torch.utils.collect_env.run",
        "numpy.ctypeslib.load_library",
    ):
        assert resolve(path)[1] and _refused(f"import {path.split('.')[0]}\nx = {path}\n"), path


def test_the_allowed_namespaces_are_chained_from_their_roots():
    """Every namespace's parent is listed, so a dotted import of it resolves step by step."""
    for ns in ALLOWED:
        assert resolve(ns) == (True, None), ns
        assert ALLOWED[ns][0], f"{ns} needs a reason"


def test_the_security_doc_names_every_namespace():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    section = doc.split("## Scan allow-list", 1)[1].split("\n## ", 1)[0]
    assert [ns for ns in ALLOWED if f"`{ns}" not in section and f" {ns}" not in section] == []


def test_each_reexport_name_is_flagged_in_attribute_chains_imports_and_getattr():
    for name in sorted(REEXPORTED_MODULES):
        for src in (
            f"import torch\nm = torch.{name}\n",
            f"from torch import {name}\n",
            f"import torch\nm = getattr(torch, '{name}')\n",
            f"def f(x):\n    return x.{name}\n",
        ):
            findings = scan_source("kernels/k.py", src.encode()).findings
            assert any(f"{name} module" in f.reason for f in findings), (src, findings)
