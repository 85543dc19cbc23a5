"""The value rules against the installed libraries (tests/scan/introspect.py, in a fresh interpreter): LIB_NAMES covers
every library type an allowed call returns, every file-system sink the allow-list could reach is refused, and no
allowed member or VALUE_ATTRS name hands out a module, a metaclass, a namespace or a container the library keeps."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.scan import scan_source
from hotfloat.scan.checker import resolve
from hotfloat.scan.policy import DENIED_ATTRS, REEXPORTED_MODULES, RESTRICTED
from hotfloat.scan.values import COMPARE_ONLY, LIB_NAMES, VALUE_ATTRS

INTROSPECT = Path(__file__).with_name("introspect.py")
DEVICE_MEMORY = {
    "triton.language.load": "Triton's load through a pointer (device memory; class H, docs/security.md)",
    "triton.language.load_tensor_descriptor": "the same through a TMA descriptor",
    "Pointer.load": "CuTe's load through a pointer (device memory)",
    "Tensor.load": "CuTe's tensor load (device memory)",
    "tensor_descriptor.load": "Triton's tensor-descriptor load (device memory)",
}
"""Names the file-system walk flags by their name that read device memory, not files (reviewed)."""
KEPT = {"Heuristics.values: a dict the library keeps": "the dict the bundle itself passed to triton.heuristics"}
"""Hazards reviewed as harmless, with why."""
NAME_PARAMS = {
    "torch.distributed.broadcast(src)": "a rank",
    "torch.distributed.recv(src)": "a rank",
    "triton.autotune(key)": "kernel argument names, looked up in the launch's own argument dict",
    "triton.language.dtype(name)": "a dtype name, looked up in Triton's fixed table",
    "triton.language.gather(src)": "a tensor",
    "triton.language.tuple_type(fields)": "field names of a device tuple, looked up in the tuple's own list",
    "typing.TypeVar(name)": "a label",
    **{f"cutlass.cute.{m}(src)": "a tensor" for m in ("assume", "autovec_copy", "basic_copy", "basic_copy_if")},
    **{f"cutlass.cute.{m}(src)": "a tensor" for m in ("copy", "make_fragment_like", "make_rmem_tensor_like")},
    **{f"cutlass.cute.{m}(src)": "a tensor" for m in ("recast_tensor", "slice_")},
}
"""Parameters of allowed callables that look like names-as-data sinks, reviewed: what each really takes. Members
whose parameters do turn names or source into attribute access or code are RESTRICTED instead."""
KNOWN_SINKS = {
    "UntypedStorage._write_file",
    "UntypedStorage._set_from_file",
    "UntypedStorage.from_file",
    "TypedStorage._write_file",
    "ndarray.tofile",
    "ndarray.dump",
    "SourceFileLoader.get_data",
}
"""The red team's file-system sinks: the derivation must find them by itself."""


@pytest.fixture(scope="module")
def walked() -> dict:
    out = subprocess.run([sys.executable, str(INTROSPECT)], capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _refused(src: str) -> bool:
    return bool(scan_source("kernels/k.py", src.encode()).findings)


def test_lib_names_cover_every_library_type(walked):
    missing = {n for n in walked["lib_names"] if not (n.startswith("__") and n.endswith("__"))} - LIB_NAMES
    assert missing == set(), "run `python tests/scan/introspect.py --write` and review the diff"


def test_the_derivation_finds_the_known_file_system_sinks(walked):
    assert KNOWN_SINKS <= set(walked["fs_values"])
    assert {"torch.save", "torch.load", "torch.from_file"} <= set(walked["fs_paths"])


def test_every_file_system_sink_of_an_allowed_namespace_is_refused(walked):
    for path in walked["fs_paths"]:
        if path in DEVICE_MEMORY:
            continue
        ns, name = path.rsplit(".", 1)
        assert resolve(path)[1], path
        assert _refused(f"import {ns} as m\nx = m.{name}\n"), path


def test_every_file_system_sink_of_a_value_is_refused_even_when_the_bundle_defines_its_name(walked):
    for owner_name in walked["fs_values"]:
        name = owner_name.rsplit(".", 1)[1]
        if owner_name in DEVICE_MEMORY or not name.isidentifier():
            continue
        assert name not in VALUE_ATTRS and name not in COMPARE_ONLY, owner_name
        assert _refused(f"def f(x):\n    return x.{name}(3)\n"), owner_name
        if not name.startswith("__"):
            assert _refused(f"class K:\n    def {name}(self):\n        pass\ndef f(x):\n    return x.{name}(3)\n")


def test_numpy_is_off_the_allow_list():
    """Every numpy value reaches files (tofile, dump, save, memmap) and the datetime parser ('now' is a clock)."""
    for src in ("import numpy\n", "import numpy as np\nx = np.zeros(1)\n", "from numpy import memmap\n"):
        assert _refused(src), src


def test_no_allowed_member_or_value_attribute_hands_out_library_state(walked):
    assert set(walked["hazards"]) == set(KEPT)


def test_every_parameter_that_takes_names_or_source_is_reviewed_or_restricted(walked):
    """A new allowed callable that takes attribute names or source text (as `functools.wraps(assigned=...)` and
    `dataclass` on a type() class did) fails here until it is restricted to a literal form or reviewed."""
    unreviewed = [p for p in walked["name_params"] if p not in NAME_PARAMS and p.split("(")[0] not in RESTRICTED]
    assert unreviewed == []


def test_value_attrs_are_plain_public_names():
    for name in VALUE_ATTRS | set(COMPARE_ONLY):
        assert name.isidentifier() and not name.startswith("_"), name
        assert name not in DENIED_ATTRS and name not in REEXPORTED_MODULES, name


@pytest.mark.parametrize(
    "src",
    [
        "def f(x):\n    return x.shape[0] * x.stride(0)\n",
        "class Cfg:\n    def __init__(self):\n        self.n_blocks = 4\n    def grid_for(self, n):\n        return n // self.n_blocks\n",
        "def f(x):\n    return x.device.type == 'cuda'\n",
        "import collections\nCfg = collections.namedtuple('Cfg', 'n_rows n_cols')\ndef f(c):\n    return c.n_rows\n",
        "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Cfg:\n    n_rows: int = 1\ndef f(c):\n    return c.n_rows\n",
        "import enum\nclass Mode(enum.Enum):\n    FAST = 1\nm = Mode.FAST.value\n",
        "def f(x):\n    return '{} rows, {n} cols'.format(x, n=3)\n",
    ],
)
def test_honest_value_use_passes(src):
    assert scan_source("kernels/k.py", src.encode()).findings == (), src


@pytest.mark.parametrize(
    "src,why",
    [
        ("class K:\n    def f(self):\n        self.data = 1\n", "a library type has this attribute"),
        ("def f(x):\n    x.n_rows = 1\n", "only attributes the bundle itself defines"),
        ("class K:\n    def f(self):\n        self.grid = 1\n", "a library type has this attribute"),
        ("def f(x):\n    return x.get_capture_scope()\n", "is not an attribute kernels may read"),
        ("def f(x):\n    return x.device.type()\n", ".type only in a comparison"),
    ],
)
def test_library_names_stay_unusable(src, why):
    findings = scan_source("kernels/k.py", src.encode()).findings
    assert any(why in f.reason for f in findings), findings
