"""The red team's bundles (tests/scan/fixtures/redteam, one per bypass of REDTEAM.md, each scan-clean before issue 49)
are refused with a finding that names their class, and variants of each class it did not build are refused too."""

import re
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.scan import scan_bundle, scan_source

FIXTURES = Path(__file__).parent / "fixtures" / "redteam"

CLASSES = {
    "K": r"coding cookie",
    "A": r"match statements|from \S+ import __|format field|\.format_map|functools\.wraps|computed name|dunder",
    "B": r"type\(\): builds classes|defines __|class keywords|enum",
    "D": r"is not an attribute kernels may read|a library type has this attribute",
    "C": r"assignment to \.|monkey-patching",
    "E": r"\.(tofile|dump|_write_file|_set_from_file)\b|import of 'numpy'",
    "F": r"special register|import of 'numpy'|\.astype",
    "G": r"generators|class bases|defines __str__",
    "I": r"dataclasses\.dataclass|_compile_and_exec",
    "J": r"^\w+\(\): ",
    "H": r"^id\(\): object addresses",
}
"""Cause class -> what its refusal says (REDTEAM.md's table)."""
EXPECTED = {
    "encoding_cookie_utf7": "K",
    "encoding_cookie_unicode_escape": "K",
    "match_getattr": "A",
    "relative_import_dunder": "A",
    "format_attr": "A",
    "computed_dunder_finalizer": "B",
    "wraps_getattr_setattr": "A",
    "triton_capture_scope": "D",
    "array_interface_rawmem": "B",
    "patch_class_via_value": "C",
    "mutate_library_state": "D",
    "private_storage_fd": "D",
    "builtin_license_read": "J",
    "triton_interp_exec": "I",
    "numpy_tofile": "E",
    "numpy_clock": "F",
    "inline_asm_clock": "F",
    "generator_finalizer": "G",
    "exception_str_trusted": "G",
    "triton_ptr_oob": "H",
    "dataclass_exec": "I",
    "builtin_input_stdin": "J",
}


def test_every_red_team_bundle_has_a_class():
    assert sorted(p.name for p in FIXTURES.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_red_team_bundle_is_refused_naming_its_class(name):
    report = scan_bundle(load_bundle(FIXTURES / name))
    findings = [f.split(": ", 1)[1] for op in report.ops for f in op.findings]
    assert not report.clean
    assert any(re.search(CLASSES[EXPECTED[name]], f) for f in findings), findings


VARIANTS = {
    "A": [
        "def f(x):\n    match x:\n        case {'k': v, **rest}:\n            return rest\n",
        "def f(x, n):\n    return hasattr(x, n)\n",
        "import functools\ndef f(a):\n    return a\ng = functools.wraps(f, assigned=['__class__'])(f)\n",
        "import functools\ndef f(a):\n    return a\nw = functools.wraps\ng = w(f)(f)\n",
        "import functools\ndef f(a):\n    @functools.wraps(f, updated=())\n    def g():\n        pass\n    return g\n",
        "def f(x):\n    return '{0.__class__}'.format(x)\n",
        "def f(x, s):\n    return s.format(x)\n",
        "def f(x):\n    return str.format('{0.real}', x)\n",
        "def f(x):\n    return '{:{0.real}}'.format(x)\n",
        "from . import helper\ng = helper.__loader__\n",
    ],
    "B": [
        "import torch\nK = type(torch.zeros(1))('K', (), {})\n",
        "import enum\nE = enum.Enum('E', {'__del__': print})\n",
        "from enum import Enum as E\nX = E('X', 'a b')\n",
        "import enum\nclass Base(enum.Enum):\n    pass\n",
        "import enum\nclass M(enum.Enum):\n    A = 1\n    def _missing_(cls, v):\n        return cls.A\n",
        "import typing\nT = typing.NamedTuple('T', [('a', int)])\n",
        "import collections\ndef f(n):\n    return collections.namedtuple('T', n)\n",
        "class K(metaclass=abc):\n    pass\n",
        "import torch\nclass K(torch.Tensor):\n    pass\n",
        "class K:\n    __eq__ = len\n",
        "class K:\n    def __repr__(self):\n        return ''\n",
    ],
    "C": [
        "import torch\ndef f(x):\n    del x.copy_\n",
        "import torch\nT = torch.Tensor\nT.copy_ = len\n",
        "class K:\n    def f(self):\n        self.copy_ = len\n",
        "def f(p):\n    p.keywords['kind'] = 1\n",
        "import triton.language as tl\ntl.cumsum.src = ''\n",
        "def f(x):\n    x.data_ptr = len\n",
    ],
    "D": [
        "def f(x):\n    return x.untyped_storage()\n",
        "def f(x):\n    return x.storage()._share_filename_cpu_()\n",
        "import triton.language as tl\nf = tl.cumsum.fn.__globals__\n",
        "import triton.language as tl\ng = tl.cumsum.used_global_vals\n",
        "class K:\n    def keywords(self):\n        pass\ndef f(p):\n    return p.keywords\n",
        "class K:\n    def tofile(self):\n        pass\ndef f(a):\n    a.tofile('/x')\n",
        "def f(x):\n    return x.numpy()\n",
        "def f(x):\n    return x.register_hook(len)\n",
        "def f(x):\n    return x.type('torch.FloatTensor')\n",
        "def f(x):\n    t = x.type\n    return t\n",
        "import triton\ndef f(k):\n    return triton.autotune(configs=[], key=[])(k).do_bench\n",
    ],
    "E": [
        "import torch\ntorch.save({}, '/tmp/x')\n",
        "import torch\nx = torch.from_file('/etc/passwd')\n",
        "import numpy as np\nnp.zeros(1).tofile('/tmp/x')\n",
        "def f(x):\n    x.untyped_storage()._write_file(3, True, False, 1)\n",
    ],
    "F": [
        "import numpy as np\nt = np.datetime64('now')\n",
        "import cutlass.cute as cute\np = cute.make_ptr(cutlass.Float32, 1234)\n",
        "import triton.language as tl\ndef k():\n    return tl.inline_asm_elementwise('mov.u64 $0, %clock64;', '=l', [], dtype=tl.int64, is_pure=False, pack=1)\n",
        "import triton.language as tl\nA = 'mov.u32 $0, 1;'\ndef k():\n    return tl.inline_asm_elementwise(A, '=r', [], dtype=tl.int32, is_pure=True, pack=1)\n",
        "import triton.language as tl\ndef k(p):\n    return tl.inline_asm_elementwise('ld.global.u32 $0, [$1];', '=r,l', [p], dtype=tl.int32, is_pure=True, pack=1)\n",
        "import triton.language as tl\ndef k(x):\n    return tl.inline_asm_elementwise('mov.u32 $0, %smid;', '=r,r', [x], dtype=tl.int32, is_pure=True, pack=1)\n",
        "import triton.language as tl\nasm = tl.inline_asm_elementwise\ndef k(a):\n    return asm(a, '=r', [], dtype=tl.int32, is_pure=True, pack=1)\n",
        "from triton.language.extra.cuda import globaltimer\n",
    ],
    "G": [
        "def f():\n    yield 1\n",
        "def f():\n    yield from range(3)\n",
        "class E(ValueError):\n    pass\n",
        "class E(Exception):\n    pass\n",
        "class K:\n    def __del__(self):\n        pass\n",
        "class K:\n    def __iter__(self):\n        return iter(())\n",
        "class K:\n    def __hash__(self):\n        return 1\n",
    ],
    "I": [
        "import dataclasses\nK = dataclasses.dataclass(object)\n",
        "from dataclasses import dataclass\ndef f(c):\n    return dataclass(c)\n",
        "from dataclasses import dataclass\n@dataclass(eq=flag)\nclass K:\n    x: int = 0\n",
        "import cutlass.cute as cute\n@cute.jit\ndef k(x: \"__import__('os').getpid()\"):\n    pass\n",
        "import typing\nT = typing.Optional[\"__import__('os')\"]\n",
    ],
    "J": [
        "x = input()\n",
        "print('PASS')\n",
        "x = id(1)\n",
        "x = dir()\n",
        "x = object()\n",
        "x = vars()\n",
        "x = credits\n",
        "x = memoryview(b'')\n",
        "x = super(int, 1)\n",
        "def f(x):\n    return super().copy_\n",
        "x = __builtins__\n",
        "def f():\n    return chr(95)\n",
    ],
}
"""Variants of each class the red team did not build: held-out shapes of the same attacks."""


@pytest.mark.parametrize("cls,src", [(c, s) for c, srcs in VARIANTS.items() for s in srcs])
def test_variants_of_each_class_are_refused(cls, src):
    assert scan_source("kernels/k.py", src.encode()).findings, src


@pytest.mark.parametrize(
    "src",
    [
        "import enum\ndef f(s):\n    return s\nclass E(enum.Enum):\n    A = f\n",
        "import enum\nclass E(enum.Enum):\n    A = len(())\n",
        "import typing\nT = typing.TypeVar('T', bound=\"__import__('os')\")\n",
        "__name__ = 'triton.language.standard'\n",
        "import math as __name__\n",
        "def f():\n    global __doc__\n    __doc__ = 1\n",
    ],
)
def test_held_out_escapes_found_in_review_are_refused(src):
    """An enum whose only 'member' is a function has no members (then E('X', names) builds a class); a TypeVar's
    bound is a ForwardRef."""
    assert scan_source("kernels/k.py", src.encode()).findings, src


def test_a_restricted_member_may_not_travel_through_another_bundle_file(tmp_path):
    root = tmp_path / "b"
    (root / "kernels").mkdir(parents=True)
    (root / "manifest.toml").write_text((FIXTURES / "format_attr" / "manifest.toml").read_text())
    (root / "metadata").mkdir()
    (root / "metadata" / "silu_and_mul.json").write_text('{"graph_safe": true}')
    (root / "kernels" / "helper.py").write_text("from dataclasses import dataclass\nfrom enum import Enum\n")
    (root / "kernels" / "silu_and_mul.py").write_text(
        "from .helper import Enum\nfrom . import helper\nE = Enum('E', 'a')\nD = helper.dataclass\n"
        "def silu_and_mul(x, out):\n    out.copy_(x[..., : x.shape[-1] // 2])\n"
    )
    findings = [f for op in scan_bundle(load_bundle(root)).ops for f in op.findings]
    assert [f.split(": ", 1)[0] for f in findings] == ["kernels/silu_and_mul.py:1", "kernels/silu_and_mul.py:4"]
