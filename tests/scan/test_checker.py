"""Each policy rule has a violating snippet that must be flagged and, where it matters, a look-alike that must not."""

import pytest

from hotfloat.scan import scan_source

BAD = {
    "import os": "import of 'os'",
    "import subprocess": "import of 'subprocess'",
    "from socket import socket": "import of 'socket'",
    "import ctypes": "import of 'ctypes'",
    "import pickle": "import of 'pickle'",
    "import importlib": "import of 'importlib'",
    "import threading": "import of 'threading'",
    "import gc": "import of 'gc'",
    "import sys": "import of 'sys'",
    "import io": "import of 'io'",
    "import torch.utils.cpp_extension": "torch.utils.cpp_extension",
    "from torch.utils.cpp_extension import load_inline": "torch.utils.cpp_extension",
    "import torch\ntorch.ops.load_library('x.so')": "native library load",
    "import torch as t\nu = t.utils\nu.cpp_extension.load('x')": "cpp_extension",
    "import torch\nx = torch.load('f')": "torch.load",
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True": "torch.backends",
    "import torch\ntorch.set_default_dtype(torch.float16)": "torch.set_default_dtype",
    "import torch\ntorch.nn.functional.silu = lambda x: x": "monkey-patching",
    "import torch\ns = torch.cuda.Stream()": "side streams",
    "import torch\ntorch._C._foo()": "private internals",
    "from torch import _C": "private internals",
    "import numpy as np\nnp.load('a')": "numpy.load",
    "eval('1')": "eval()",
    "exec('1')": "exec()",
    "compile('1', 'f', 'exec')": "compile()",
    "__import__('os')": "__import__",
    "open('/etc/passwd')": "open()",
    "f = getattr(object, name)": "computed name",
    "f = getattr(object, '__subclasses__')": "private or dunder",
    "setattr(a, 'b', 1)": "setattr()",
    "x = ().__class__.__bases__": "dunder attribute",
    "g = f.__globals__": "dunder attribute",
    "b = __builtins__": "dunder name",
    "def f():\n    return f.__code__": "dunder attribute",
    "import operator\nh = operator.attrgetter('__globals__')": "attrgetter: attribute access by string",
    "h = f('__globals__')": "names a dunder",
    "class A:\n    def __del__(self):\n        pass": "defines __del__",
    "async def f():\n    pass": "async",
    "def f(e):\n    return e.__traceback__.tb_frame.f_globals": "frame introspection",
    "from . import *": "star imports",
    "def f(:\n": "syntax error",
    "import torch\ntorch.os.system('id')": "reaches the os module",
    "import torch\nf = torch.sys._getframe": "reaches the sys module",
    "import torch\nf = torch.builtins.open('/etc/passwd')": "reaches the builtins module",
    "import torch\nm = torch.importlib.import_module('socket')": "reaches the importlib module",
    "import torch\nlibc = torch.ctypes.CDLL(None)": "reaches the ctypes module",
    "import torch as t\nalias = t\nalias.cuda.os.getpid()": "reaches the os module",
    "import enum\nb = enum.bltns.open": "reaches the bltns module",
    "import dataclasses\nf = dataclasses.sys.modules": "reaches the sys module",
    "import typing\nf = typing.types.FunctionType": "reaches the types module",
    "from torch import os": "torch.os: reaches the os module",
    "import torch.os": "torch.os: reaches the os module",
    "def f(x):\n    return [x][0].subprocess": "reaches the subprocess module",
    "import torch\nm = getattr(torch, 'os')": "getattr(..., 'os'): reaches the os module",
    "import torch\nm = getattr(torch, 'o' 's')": "getattr(..., 'os')",
    "import torch\nm = getattr(torch, name)": "computed name",
    "import torch\nm = getattr(torch, *names)": "unpacked arguments",
    "import torch\nm = getattr(torch.utils, 'cpp_extension')": "native extension",
    "import functools\nimport torch\nm = functools.reduce(getattr, ['os'], torch)": "getattr passed as a value",
    "g = getattr\nm = g(x, 'y')": "getattr passed as a value",
    "import operator\nf = operator.attrgetter('os')": "attrgetter: attribute access by string",
    "from operator import attrgetter": "operator.attrgetter",
    "from operator import methodcaller": "operator.methodcaller",
    "import operator as op\nk = [op][0].attrgetter('os')": "attrgetter",
    "import typing\ntyping.get_type_hints(f)": "evaluates strings as code",
    "import torch\nd = torch.__dict__['os']": "dunder attribute",
    "import torch\nd = vars(torch)['os']": "vars()",
    "import torch\nd = type(torch).__getattribute__(torch, 'os')": "dunder attribute",
    "import torch\nd = object.__getattribute__(torch, 'os')": "dunder attribute",
}

GOOD = [
    "import torch\nimport triton\nimport triton.language as tl\nimport math\n",
    "from __future__ import annotations\nfrom typing import Optional\n",
    "import torch\ndef run(x, out):\n    out.copy_(torch.nn.functional.silu(x))\n",
    "class K:\n    def __init__(self):\n        super().__init__()\n",
    "def run(input, out):\n    out.copy_(input)\n",
    "import torch\nn = torch.cuda.memory_allocated()\n",
    "from .helpers import block_size\n",
    "x = getattr(obj, 'shape')\n",
    "import cutlass\nimport cutlass.cute as cute\n",
    "import torch\nx = getattr(torch.cuda, 'is_available')()\n",
    "import numpy as np\ny = np.copy(np.random.rand(3)).copy()\n",
    "from collections import abc\nimport operator\nz = operator.add(1, 2)\n",
]


@pytest.mark.parametrize("src,why", BAD.items())
def test_flags_violation(src, why):
    findings = scan_source("kernels/k.py", src.encode()).findings
    assert findings, src
    assert any(why in f.reason for f in findings), [f.reason for f in findings]


@pytest.mark.parametrize("src", GOOD)
def test_accepts_honest_code(src):
    assert scan_source("kernels/k.py", src.encode()).findings == ()


def test_reports_file_and_line():
    (f,) = scan_source("kernels/k.py", b"import torch\n\nimport os\n").findings
    assert (f.file, f.line) == ("kernels/k.py", 3)
    assert str(f).startswith("kernels/k.py:3: ")


def test_hostile_sources_do_not_crash():
    deep = b"x = " + b"(" * 5000 + b"1" + b")" * 5000
    assert scan_source("kernels/k.py", deep).findings
    assert scan_source("kernels/k.py", b"\xff\xfe").findings
    assert scan_source("kernels/k.py", b"#" * (600 * 1024)).findings
