"""Walks the installed torch, triton, cutlass, numpy and stdlib for what the scan's value rules rest on; run as a
script in a fresh interpreter by tests/scan/test_values.py, printing one JSON object.

- lib_names: every attribute name (dir() of the class, of its metaclass and of an instance) of every type an allowed
  call can return or a kernel is handed; `--write` stores them in hotfloat/scan/lib_names.txt.
- fs: every allowed member and every attribute of those types that reaches the file system, judged by its name, its
  parameters (path, file, fd, filename, ...) and its docstring.
- hazards: VALUE_ATTRS names that, on some of those types or members, give a module, a namespace dict, a frame or
  code object, or a list/dict/set the library keeps between calls.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import enum
import functools
import importlib
import inspect
import itertools
import json
import re
import sys
import types
import typing
import warnings
from pathlib import Path

warnings.simplefilter("ignore")

OUT = Path(__file__).resolve().parents[2] / "libs" / "hotfloat" / "hotfloat" / "scan" / "lib_names.txt"
FS_NAME = re.compile(r"(^|_)(file|files|filename|fd|path|save|load|dump|dumps|memmap|mmap|pickle|tofile|fromfile|open)(_|$)")
FS_PARAM = re.compile(r"^(path|file|fd|f|fid|filename|fname|file_name|filepath|dirname|dir|directory|fp|fileobj)$")
FS_DOC = re.compile(r"\b(file name|filename|file descriptor|file-like|file object|path to|pickle|to disk|from disk)\b", re.I)


def _optional(build):
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
        _optional(lambda: t.storage()),
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
        _optional(lambda: torch._C._CudaDeviceProperties),
        torch.distributed.ReduceOp,
        torch.distributed.ReduceOp.SUM,
        _optional(lambda: torch.distributed.ProcessGroup),
        _optional(lambda: torch.distributed.Work),
        _optional(lambda: (t.requires_grad_() * 2).grad_fn),
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
        _optional(lambda: importlib.import_module("triton.compiler").CompiledKernel),
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
    out += _cutlass_types()
    return [v for v in out if v is not None]


def _cutlass_types() -> list[object]:
    """Every class and callable the CuTe DSL's allowed namespaces hold, and the classes of their modules."""
    try:
        import cutlass
        import cutlass.cute as cute
    except Exception:
        return []
    out: list[object] = []
    for mod in (cutlass, cute, cute.arch, cute.math, importlib.import_module("cutlass.cute.typing")):
        for v in vars(mod).values():
            if isinstance(v, type) or callable(v):
                out.append(v)
    return out


def allowed_members() -> dict[str, object]:
    """Every allowed namespace member that imports here, keyed by its dotted path."""
    from hotfloat.scan.policy import ALLOWED, MEMBERS

    out = {}
    for ns in ALLOWED:
        mod = _optional(lambda: importlib.import_module(ns))
        for m in sorted(MEMBERS[ns]) if mod is not None else ():
            if hasattr(mod, m):
                out[f"{ns}.{m}"] = getattr(mod, m)
    return out


def names_of(value: object) -> set[str]:
    """dir() of the value, of its class and of the class's metaclass."""
    out: set[str] = set()
    for v in (value, type(value), type(type(value))):
        out |= set(_optional(lambda v=v: dir(v)) or ())
    return out


def reaches_fs(name: str, value: object) -> bool:
    """A file-system sink by its name, a parameter that names a path or descriptor, or its docstring."""
    if FS_NAME.search(name):
        return True
    params = _optional(lambda: inspect.signature(value).parameters) or {}
    if any(FS_PARAM.match(p) for p in params):
        return True
    doc = _optional(lambda: inspect.getdoc(value)) or ""
    return bool(FS_DOC.search(doc.split("\n\n")[0] if callable(value) else ""))


def hazard(value: object) -> str | None:
    """What makes an attribute's value unsafe to hand to bundle code, or None."""
    if isinstance(value, types.ModuleType):
        return "a module"
    if isinstance(value, (types.FrameType, types.CodeType, types.TracebackType)):
        return "a frame, code or traceback object"
    if isinstance(value, dict) and ("__builtins__" in value or "__name__" in value):
        return "a namespace dict"
    if isinstance(value, (dict, list, set, bytearray)) and len(value):
        return f"a {type(value).__name__} the library keeps"
    return None


def walk() -> dict[str, object]:
    from hotfloat.scan.values import VALUE_ATTRS

    types_ = value_types()
    members = allowed_members()
    lib_names = set()
    for v in types_ + list(members.values()):
        lib_names |= names_of(v)
    fs, hazards = [], []
    for path, member in sorted(members.items()):
        if reaches_fs(path.rsplit(".", 1)[1], member):
            fs.append(path)
    for v in types_ + list(members.values()):
        owner = getattr(v, "__qualname__", None) or type(v).__qualname__
        for name in names_of(v):
            attr = _optional(lambda name=name: getattr(v, name))
            if reaches_fs(name, attr):
                fs.append(f"{owner}.{name}")
            if name in VALUE_ATTRS and not callable(attr) and (why := hazard(attr)):
                hazards.append(f"{owner}.{name}: {why}")
    return {"lib_names": sorted(lib_names), "fs": sorted(set(fs)), "hazards": sorted(set(hazards))}


if __name__ == "__main__":
    result = walk()
    if sys.argv[1:] == ["--write"]:
        names = [n for n in result["lib_names"] if not (n.startswith("__") and n.endswith("__"))]
        OUT.write_text("".join(" ".join(names[i : i + 12]) + "\n" for i in range(0, len(names), 12)))
    print(json.dumps(result))
