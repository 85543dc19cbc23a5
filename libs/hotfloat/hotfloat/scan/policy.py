"""What bundle code may touch: an allow-list of modules, and deny-lists for the dangerous corners of allowed ones.

Scan is hygiene that gives kernel authors an early, precise message; the runtime sandbox is what contains code."""

ALLOWED_MODULES = frozenset({
    "__future__", "abc", "collections", "dataclasses", "enum", "functools", "itertools", "math", "numbers",
    "operator", "typing", "numpy", "torch", "triton", "cutlass",
})
"""Import roots bundle code may use. Everything else (os, sys, io, socket, subprocess, threading, ctypes, pickle,
importlib, inspect, gc, ...) is refused."""

DENIED_PATHS = {
    "torch.utils.cpp_extension": "native extension build/load",
    "torch.ops.load_library": "native library load",
    "torch.library": "operator registration can replace torch's own kernels",
    "torch.load": "deserialization",
    "torch.save": "file-system write",
    "torch.from_file": "file-system read",
    "torch.serialization": "deserialization",
    "torch.hub": "network download",
    "torch.multiprocessing": "process creation",
    "torch.utils.data": "worker processes",
    "torch.compile": "spawns compiler workers outside the op",
    "torch.cuda.Stream": "side streams defer work past the check",
    "torch.cuda.stream": "side streams defer work past the check",
    "torch.cuda.set_stream": "side streams defer work past the check",
    "torch.cuda.CUDAGraph": "graph capture belongs to the validator",
    "torch.cuda.graph": "graph capture belongs to the validator",
    "torch.cuda.cudart": "raw CUDA runtime access",
    "torch.backends": "global numerics switches (precision downgrade)",
    "torch.cuda.memory": "allocator internals",
    "numpy.load": "deserialization (pickle)",
    "numpy.save": "file-system write",
    "numpy.fromfile": "file-system read",
    "numpy.memmap": "file-system mapping",
    "numpy.ctypeslib": "FFI",
    "numpy.lib": "file-system and FFI helpers",
    "numpy.f2py": "native extension build",
    "torch.package": "deserialization of code",
    "torch.jit.load": "deserialization",
    "torch.export": "deserialization of programs",
    "triton.runtime.build": "native extension build",
    "operator.attrgetter": "attribute access by string (evades the attribute checks)",
    "operator.methodcaller": "method call by string (evades the attribute checks)",
    "typing.get_type_hints": "evaluates strings as code",
    "typing.ForwardRef": "evaluates strings as code",
}
"""Dotted paths under allowed modules that are refused, with the reason."""

DENIED_PREFIX_FUNCS = {"torch.set_": "global torch state (precision, defaults, threads)"}

DENIED_ATTRS = {
    "cpp_extension": "native extension build/load",
    "load_library": "native library load",
    "load_inline": "native extension build",
    "cudart": "raw CUDA runtime access",
    "ctypeslib": "FFI",
    "from_file": "file-system read",
    "f_globals": "frame introspection",
    "f_locals": "frame introspection",
    "f_back": "frame introspection",
    "f_builtins": "frame introspection",
    "tb_frame": "frame introspection",
    "gi_frame": "frame introspection",
    "cr_frame": "frame introspection",
    "ag_frame": "frame introspection",
    "attrgetter": "attribute access by string (evades the attribute checks)",
    "methodcaller": "method call by string (evades the attribute checks)",
    "compile_module_from_src": "native extension build",
    "get_type_hints": "evaluates strings as code",
}
"""Attribute names refused on any object, so aliasing a module through a variable does not evade DENIED_PATHS."""

REEXPORTED_MODULES = frozenset({
    "argparse", "ast", "atexit", "bltns", "builtins", "concurrent", "contextvars", "copyreg", "ctypes", "datetime", "dis",
    "gc", "glob", "gzip", "importlib", "inspect", "io", "linecache", "logging", "marshal", "mock", "mp",
    "multiprocessing", "os", "pathlib", "pickle", "pickletools", "pkgutil", "platform", "posix", "python_multiprocessing",
    "reducer", "reduction", "shutil", "signal", "socket", "subprocess", "synchronize", "sys", "sysconfig", "tarfile",
    "tempfile", "threading", "time", "tokenize", "traceback", "types", "unittest", "weakref", "wintypes", "zipfile",
})
"""Names under which torch, numpy, triton and the allowed stdlib modules re-export modules bundle code may not import
(`torch.os`, `enum.bltns`, `dataclasses.sys`, ...): refused as attributes of any object, in dotted imports and as
getattr names. tests/scan/test_policy.py walks the installed packages so a new re-export cannot slip through."""
DANGEROUS_MODULES = frozenset({
    "_thread", "argparse", "ast", "atexit", "builtins", "code", "codeop", "concurrent", "contextvars", "copyreg",
    "ctypes", "datetime", "dis", "gc", "glob", "gzip", "importlib", "inspect", "io", "linecache", "logging", "marshal",
    "multiprocessing", "os", "pathlib", "pickle", "pickletools", "pkgutil", "platform", "posix", "runpy", "shutil",
    "signal", "socket", "subprocess", "sys", "sysconfig", "tarfile", "tempfile", "threading", "time", "tokenize",
    "traceback", "types", "unittest", "weakref", "zipfile", "zipimport",
})
"""Module roots whose re-exports must be refused: process, file, import, code, introspection and clock access."""

DENIED_BUILTINS = {
    "eval": "dynamic code", "exec": "dynamic code", "compile": "dynamic code", "__import__": "dynamic import",
    "open": "file-system access", "breakpoint": "debugger hook", "globals": "namespace escape",
    "locals": "namespace escape", "vars": "namespace escape", "setattr": "dynamic attribute write",
    "delattr": "dynamic attribute delete", "exit": "process control", "quit": "process control", "help": "interactive",
    "memoryview": "raw memory views", "__build_class__": "class construction hook",
}

ALLOWED_DUNDER_NAMES = frozenset({"__name__", "__all__", "__doc__", "__future__", "__init__"})
"""Dunder names and attributes with no introspection power (`super().__init__`, `fn.__name__`)."""
ALLOWED_DUNDER_DEFS = frozenset({
    "__init__", "__call__", "__repr__", "__str__", "__eq__", "__hash__", "__len__", "__iter__", "__post_init__",
})
"""Dunder methods a kernel may define; others (__del__, __getattr__, __reduce__, ...) run code at surprising times."""
