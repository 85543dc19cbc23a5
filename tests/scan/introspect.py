"""Walks the installed torch, triton, cutlass, numpy and stdlib for what the scan's value rules rest on; run as a
script in a fresh interpreter by tests/scan/test_values.py, printing one JSON object.

- lib_names: every attribute name (dir() of the class, of its metaclass and of an instance) of every type an allowed
  call can return or a kernel is handed; `--write` stores them in hotfloat/scan/lib_names.txt.
- fs_paths / fs_values: every attribute of an allowed namespace (by path) and of those types (by owner.name) that
  reaches the file system, judged by its name, its parameters (path, file, fd, filename, ...) and its docstring.
- hazards: allowed members, and VALUE_ATTRS on those types and members, that give a module, a metaclass, a namespace
  dict, a frame or code object, or a list/dict/set the library keeps between calls.
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
    return [v for v in out if v is not None]


def _library_classes() -> list[object]:
    """Every class and callable of the loaded Triton and CuTe DSL modules: the objects their calls hand back
    (launchers, compiled kernels, DSL values) are instances of these."""
    _optional(lambda: importlib.import_module("cutlass.cute"))
    out: list[object] = []
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] in ("triton", "cutlass") and isinstance(mod, types.ModuleType):
            out += [v for v in vars(mod).values() if isinstance(v, type) or callable(v)]
    return out


def probed_names() -> set[str]:
    """Names library code reads by string on objects it is handed (`hasattr(arg, "data_ptr")`): a bundle that sets
    one on a tensor would run its code inside a trusted caller."""
    import torch
    import triton

    roots = [Path(triton.__file__).parent / d for d in ("runtime", "language", "compiler")]
    roots += [Path(torch.__file__).parent / f for f in ("_tensor.py", "overrides.py", "_utils.py", "nn/parameter.py")]
    files = [f for r in roots for f in (r.rglob("*.py") if r.is_dir() else [r])]
    probe = re.compile(r"\b(?:hasattr|getattr)\([^,()]+,\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")
    return {m for f in files for m in probe.findall(f.read_text(errors="replace"))}


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
    if isinstance(value, type) and issubclass(value, type):
        return "a metaclass (builds classes from a namespace)"
    if isinstance(value, dict) and ("__builtins__" in value or "__name__" in value):
        return "a namespace dict"
    if isinstance(value, (dict, list, set, bytearray)) and len(value):
        return f"a {type(value).__name__} the library keeps"
    return None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def walk() -> dict[str, object]:
    """The derived lists: names, file-system sinks (namespace attributes by path, value attributes by name with their
    owner), and hazards among allowed members and VALUE_ATTRS."""
    from hotfloat.scan.policy import ALLOWED
    from hotfloat.scan.values import VALUE_ATTRS

    types_ = value_types()
    members = allowed_members()
    lib_names = probed_names()
    for v in types_ + list(members.values()) + _library_classes():
        lib_names |= names_of(v)
    fs_paths, fs_values, hazards = set(), set(), set()
    for ns in ALLOWED:
        mod = importlib.import_module(ns)
        for name in dir(mod):
            if not _is_dunder(name) and reaches_fs(name, _optional(lambda name=name: getattr(mod, name))):
                fs_paths.add(f"{ns}.{name}")
    for path, member in members.items():
        if why := hazard(member):
            hazards.add(f"{path}: {why}")
    for v in types_ + list(members.values()):
        owner = getattr(v, "__qualname__", None) or type(v).__qualname__
        for name in names_of(v) - {n for n in names_of(v) if _is_dunder(n)}:
            attr = _optional(lambda name=name: getattr(v, name))
            if reaches_fs(name, attr):
                fs_values.add(f"{owner}.{name}")
            if name in VALUE_ATTRS and not callable(attr) and (why := hazard(attr)):
                hazards.add(f"{owner}.{name}: {why}")
    return {
        "lib_names": sorted(lib_names),
        "fs_paths": sorted(fs_paths),
        "fs_values": sorted(fs_values),
        "hazards": sorted(hazards),
    }


if __name__ == "__main__":
    result = walk()
    if sys.argv[1:] == ["--write"]:
        names = [n for n in result["lib_names"] if not _is_dunder(n)]
        OUT.write_text("".join(" ".join(names[i : i + 12]) + "\n" for i in range(0, len(names), 12)))
    print(json.dumps(result))
