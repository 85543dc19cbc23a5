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
    "import torch\ns = torch.cuda.Stream()": "torch.cuda.Stream is not on the allow-list",
    "import torch\ntorch._C._foo()": "private internals",
    "from torch import _C": "private internals",
    "import numpy as np\nnp.load('a')": "import of 'numpy' is not allowed",
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
    "def f(x):\n    return x\nh = f('__globals__')": "names a dunder",
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
    "import torch\nm = getattr(torch, 'os')": "torch.os: reaches the os module",
    "import torch\nm = getattr(torch, 'o' 's')": "torch.os: reaches the os module",
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

ALLOW_LIST = {
    "from torch.utils.collect_env import run": "torch.utils.collect_env.run is not on the allow-list",
    "import torch.utils.collect_env as c\nc.run('id')": "torch.utils.collect_env is not on the allow-list",
    "import torch\ntorch.utils.collect_env.run('id')": "torch.utils.collect_env.run is not on the allow-list",
    "import torch\ns = torch.cuda.streams.Stream()": "torch.cuda.streams.Stream is not on the allow-list",
    "from torch.cuda.streams import Stream": "torch.cuda.streams.Stream is not on the allow-list",
    "import torch\ns = torch.Stream()": "torch.Stream is not on the allow-list",
    "import torch\ne = torch.Event()": "torch.Event is not on the allow-list",
    "import torch\nm = torch.get_device_module()": "torch.get_device_module is not on the allow-list",
    "import torch\ns = torch.cuda.stream(None)": "torch.cuda.stream is not on the allow-list",
    "import torch\ng = torch.cuda.CUDAGraph()": "torch.cuda.CUDAGraph is not on the allow-list",
    "import torch\nn = torch.cuda.memory_allocated()": "torch.cuda.memory_allocated is not on the allow-list",
    "import torch\ntorch.compile(f)": "torch.compile is not on the allow-list",
    "import torch\nx = torch.ops.aten.add": "torch.ops.aten.add is not on the allow-list",
    "import torch\ns = torch.cuda\ns.streams.Stream()": "torch.cuda.streams.Stream is not on the allow-list",
    "import torch\nm = getattr(torch, 'cuda')\nm.streams.Stream()": "torch.cuda.streams.Stream is not on the allow-list",
    "import torch\nm = getattr(torch.cuda, 'streams')": "torch.cuda.streams is not on the allow-list",
    "def f():\n    return m.utils.collect_env.run()\nimport torch\nm = torch": "torch.utils.collect_env.run is not",
    "import torch\nlen(torch)": "module torch used as a value",
    "import torch\nm = [torch.cuda][0].streams": "module torch.cuda used as a value",
    "import torch\nm = (torch if True else None).utils": "module torch used as a value",
    "import torch\nm = {'t': torch}": "module torch used as a value",
    "import torch\nm, n = torch, 1": "module torch used as a value",
    "import torch\ndef f():\n    return torch.cuda": "module torch.cuda used as a value",
    "import torch\nif (m := torch):\n    pass": "module torch used as a value",
    "import torch\ndef f(m=torch):\n    pass": "module torch used as a value",
    "import torch\nf = lambda: torch": "module torch used as a value",
    "import torch\nm = str(torch)": "module torch used as a value",
    "import torch\nx = 1\nok = x == torch": "module torch used as a value",
    "import torch\nclass K:\n    pass\nK.t = torch": "module torch used as a value",
    "import torch\nclass K:\n    t = torch\nx = K.t.utils.collect_env": ".t: t is a module (or a restricted member) in a bundle file",
    "import torch\nfrom . import helpers\nx = helpers.torch.utils": ".torch: torch is a module (or a restricted member) in a bundle file",
    "import torch\nfrom .helpers import torch as t": ".torch: torch is a module (or a restricted member) in a bundle file",
    "import torch as m\nimport triton as m": "m stands for both torch and triton",
    "import torch\nx = torch.nn.functional.torch.utils.collect_env.run": "torch.nn.functional.torch.utils.collect_env.run",
    "import torch.nn.functional as F\nx = F.torch.cuda.streams": "torch.nn.functional.torch.cuda.streams is not",
    "import torch.distributed as dist\nx = dist.os.getpid()": "torch.distributed.os.getpid: reaches the os module",
    "import torch.distributed as dist\ng = dist.new_group([0])": "torch.distributed.new_group is not",
    "import triton.language as tl\nx = tl.core.builtin": "triton.language.core.builtin is not on the allow-list",
    "import triton.language as tl\nx = tl.math.exp": "triton.language.math.exp is not on the allow-list",
    "from triton.language import core": "triton.language.core is not on the allow-list",
    "from triton.language.extra import pkgutil": "triton.language.extra.pkgutil: reaches the pkgutil module",
    "from triton.language.extra.cuda import globaltimer": "triton.language.extra.cuda.globaltimer is not",
    "from triton.language.extra.cuda.libdevice import core": "libdevice.core is not on the allow-list",
    "import triton\nd = triton.runtime.driver": "triton.runtime.driver is not on the allow-list",
    "import triton\ntriton.knobs.cache.dir = '/tmp'": "triton.knobs",
    "import numpy\nx = numpy.ctypeslib.as_array": "import of 'numpy' is not allowed",
    "import numpy as np\nx = np.lib.format.open_memmap": "import of 'numpy' is not allowed",
    "from numpy import random": "import of 'numpy' is not allowed",
    "import math\nx = math.__loader__": "dunder attribute",
    "import math\nx = math.sys": "math.sys: reaches the sys module",
    "from typing import get_type_hints": "typing.get_type_hints is not on the allow-list",
    "import operator\nf = operator.itemgetter('x')": "operator.itemgetter is not on the allow-list",
    "import cutlass.cute as cute\nt = cute.arch.clock()": "cutlass.cute.arch.clock is not on the allow-list",
    "import cutlass\nx = cutlass.cute.nvgpu": "cutlass.cute.nvgpu is not on the allow-list",
}
"""The allow-list refuses by construction: every path it does not list, and every module handed to code it cannot
follow (issue 31: `torch.utils.collect_env.run` and `torch.cuda.streams.Stream` got through a deny-list)."""

GOOD = [
    "import torch\nimport triton\nimport triton.language as tl\nimport math\n",
    "from __future__ import annotations\nfrom typing import Optional\n",
    "import torch\ndef run(x, out):\n    out.copy_(torch.nn.functional.silu(x))\n",
    "class K:\n    def __init__(self):\n        super().__init__()\n",
    "def run(input, out):\n    out.copy_(input)\n",
    "from .helpers import block_size\n",
    "def f(obj):\n    return getattr(obj, 'shape')\n",
    "import cutlass\nimport cutlass.cute as cute\n",
    "import torch\nx = getattr(torch.cuda, 'is_available')()\n",
    "import torch\ny = torch.zeros(3).clone().copy_(torch.ones(3))\n",
    "from collections import namedtuple\nimport operator\nz = operator.add(1, 2)\n",
    "import torch\nm = torch.cuda\nok = m.is_available() and m.get_device_capability()[0] >= 9\n",
    "from torch import nn\nf = nn.functional.silu\n",
    "from triton.language.extra.cuda import gdc_wait\nfrom triton.language.extra import libdevice\nt = libdevice.tanh\n",
    "import torch.distributed as dist\nop = dist.ReduceOp.SUM\n",
    "import torch\ndef f(x):\n    return isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16)\n",
    "import triton\nimport triton.language as tl\n@triton.autotune(configs=[triton.Config({'B': 64})], key=['n'])\n"
    "@triton.jit\ndef k(x, n, B: tl.constexpr):\n    tl.store(x, tl.load(x) + 1)\n",
    "import torch\nm = getattr(torch, 'cuda')\nok = m.is_available()\n",
    "import cutlass.cute as cute\ni = cute.arch.thread_idx()\ne = cute.math.exp\n",
    "from .helpers import block_size\nx = block_size.bit_length()\n",
    "def f():\n    return m.exp(1.0)\nimport math as m\n",
    "try:\n    import cutlass\nexcept ImportError:\n    cutlass = None\nok = cutlass is not None\n",
]


@pytest.mark.parametrize("src,why", BAD.items())
def test_flags_violation(src, why):
    findings = scan_source("kernels/k.py", src.encode()).findings
    assert findings, src
    assert any(why in f.reason for f in findings), [f.reason for f in findings]


@pytest.mark.parametrize("src,why", ALLOW_LIST.items())
def test_refuses_what_the_allow_list_does_not_name(src, why):
    findings = scan_source("kernels/k.py", src.encode()).findings
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
