"""The library types a kernel can reach, for tests/scan/introspect.py: what allowed calls return and what a kernel is
handed, every class of the loaded Triton and CuTe DSL modules, and the names library code reads by string."""

from __future__ import annotations

import builtins
import collections
import dataclasses
import enum
import functools
import importlib
import itertools
import re
import sys
import types
import typing
from pathlib import Path


def optional(build):
    """The value build() makes, or None where the library is absent or needs a device."""
    try:
        return build()
    except Exception:
        return None


def value_types() -> list[object]:
    """Classes and instances whose attributes a kernel can reach: what allowed calls return and what it is handed."""
    import numpy as np
    import torch
    import triton
    import triton.language as tl
    from triton.runtime import autotuner, interpreter, jit

    t = torch.zeros(2, 2)

    def f(x):
        return x

    def gen():
        yield 1

    nt = collections.namedtuple("NT", "a b")
    jitted = triton.jit(f)
    out = [
        jitted,
        interpreter.InterpretedFunction(f),
        triton.autotune(configs=[triton.Config({})], key=[])(jitted),
        triton.heuristics({"B": f})(jitted),
        t,
        torch.Tensor,
        torch.nn.Parameter(torch.zeros(1)),
        t.untyped_storage(),
        optional(lambda: t.storage()),
        torch.Size([1]),
        torch.float32,
        torch.device("cpu"),
        torch.finfo(torch.float32),
        torch.iinfo(torch.int32),
        torch.topk(t, 1),
        torch.sort(t),
        torch.max(t, 0),
        torch.strided,
        torch.contiguous_format,
        torch.no_grad(),
        torch.inference_mode(),
        optional(lambda: torch._C._CudaDeviceProperties),
        torch.distributed.ReduceOp,
        torch.distributed.ReduceOp.SUM,
        optional(lambda: torch.distributed.ProcessGroup),
        optional(lambda: torch.distributed.Work),
        optional(lambda: (t.requires_grad_() * 2).grad_fn),
        np.ndarray,
        np.zeros(2),
        np.dtype(np.float32),
        np.float32(1),
        np.finfo(np.float32),
        np.iinfo(np.int32),
        np.zeros(2).flat,
        np.zeros(2).ctypes,
        np.zeros(2).flags,
        jit.JITFunction,
        jit.KernelInterface,
        interpreter.InterpretedFunction,
        interpreter.FunctionRewriter,
        interpreter.TensorHandle,
        interpreter.GridExecutor,
        autotuner.Autotuner,
        autotuner.Heuristics,
        triton.Config,
        triton.Config({}),
        optional(lambda: importlib.import_module("triton.compiler").CompiledKernel),
        tl.tensor,
        tl.constexpr,
        tl.constexpr(1),
        tl.dtype,
        tl.float32,
        tl.pointer_type,
        tl.pointer_type(tl.float32),
        tl.block_type,
        tl.tuple,
        tl.tuple_type,
        tl.tensor_descriptor,
        tl.cumsum,
        tl.load,
        functools.partial(f),
        functools.lru_cache(f),
        functools.cache(f),
        functools.cached_property(f),
        gen(),
        (x for x in ()),
        f,
        f.__code__,
        sys._getframe(),
        types.ModuleType("m"),
        property(f),
        staticmethod(f),
        classmethod(f),
        type,
        object,
        object(),
        super(int, 1),
        str,
        "",
        b"",
        bytearray(),
        memoryview(b""),
        dict,
        {},
        {}.keys(),
        [],
        iter([]),
        (),
        set(),
        frozenset(),
        1,
        1.0,
        1j,
        True,
        range(1),
        slice(1),
        map(f, ()),
        filter(f, ()),
        zip(),
        enumerate(()),
        reversed([]),
        nt,
        nt(1, 2),
        collections.defaultdict(list),
        collections.OrderedDict(),
        enum.Enum,
        enum.IntEnum,
        enum.auto(),
        type(enum.Enum),
        enum.Enum("E", "A").A,
        dataclasses.field(),
        dataclasses.Field,
        typing.List[int],
        typing.Optional[int],
        typing.TypeVar("T"),
        typing.ForwardRef("x"),
        typing.NamedTuple,
        itertools.chain(),
        itertools.product(),
        itertools.repeat(1),
        itertools.islice((), 1),
        itertools.accumulate(()),
        itertools.pairwise(()),
        builtins.license,
        builtins.help,
        builtins.exit,
        importlib.import_module("json").__loader__,
        importlib.import_module("json").__spec__,
    ]
    for exc in (BaseException, Exception, OSError, ImportError, SyntaxError, StopIteration, KeyError, UnicodeError):
        out += [exc, exc()]
    return [v for v in out if v is not None]


def library_classes() -> list[object]:
    """Every class and callable of the loaded Triton and CuTe DSL modules: the objects their calls hand back
    (launchers, compiled kernels, DSL values) are instances of these."""
    optional(lambda: importlib.import_module("cutlass.cute"))
    out: list[object] = []
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] in ("triton", "cutlass") and isinstance(mod, types.ModuleType):
            out += [v for v in vars(mod).values() if isinstance(v, type) or callable(v)]
    return out


def probed_names() -> set[str]:
    """Names library code reads by string on objects it is handed (`hasattr(arg, "data_ptr")`: a bundle that set one
    on a tensor would run its code inside a trusted caller), and the instance attributes library classes set on
    themselves (`self.rewriter = ...`), which dir() of a class does not show and an instance built inside a CuTe or
    Triton trace carries."""
    import torch
    import triton

    roots = [Path(triton.__file__).parent]
    roots += [Path(p).parent for p in (optional(lambda: importlib.import_module("cutlass").__file__),) if p]
    roots += [Path(torch.__file__).parent / f for f in ("_tensor.py", "overrides.py", "_utils.py", "storage.py")]
    roots += [Path(torch.__file__).parent / "nn" / "parameter.py"]
    files = [f for r in roots for f in (r.rglob("*.py") if r.is_dir() else [r])]
    probe = re.compile(r"\b(?:hasattr|getattr)\([^,()]+,\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")
    own = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=\n]+)?=[^=]")
    out: set[str] = set()
    for f in files:
        text = f.read_text(errors="replace")
        out |= set(probe.findall(text)) | set(own.findall(text))
    return out
