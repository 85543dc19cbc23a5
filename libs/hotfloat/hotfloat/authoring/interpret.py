"""Whether a python op's Triton kernels can run on CPU, read from the bundle's sources (never imported).

`hotfloat verify --device cpu` runs python ops with TRITON_INTERPRET=1: Triton's @jit kernels then execute through
its interpreter, except what the interpreter refuses (inline assembly, extern libdevice calls) and the DSLs it does
not cover (CuTe, imported as cutlass).
"""

from __future__ import annotations

import ast

BLOCKERS = {"inline_asm_elementwise": "inline assembly", "libdevice": "libdevice externs", "cutlass": "CuTe DSL"}
"""Names whose use keeps a kernel off Triton's interpreter, and how to say so."""


def uses_triton(files: dict[str, bytes], source: str) -> bool:
    """The op's source imports triton (its kernels are then Triton, whatever device the manifest names)."""
    return "triton" in _imported(_parse(files.get(source, b"")))


def interpreter_blocker(files: dict[str, bytes]) -> str | None:
    """What in the bundle's Python the interpreter cannot run (`file uses what`), or None: a kernel may call helpers
    in any of the bundle's files."""
    for rel, data in sorted(files.items()):
        tree = _parse(data) if rel.endswith(".py") else None
        if tree is None:
            continue
        names = (
            _imported(tree)
            | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        )
        for name, what in BLOCKERS.items():
            if name in names:
                return f"{rel} uses {what}"
    return None


def _imported(tree: ast.Module | None) -> set[str]:
    """Every module path segment and name the file imports (`from triton.language.extra import libdevice` gives
    triton, language, extra and libdevice)."""
    out: set[str] = set()
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Import):
            out |= {part for alias in node.names for part in alias.name.split(".")}
        elif isinstance(node, ast.ImportFrom):
            out |= {*(node.module or "").split("."), *(alias.name for alias in node.names)}
    return out


def _parse(data: bytes) -> ast.Module | None:
    """The file's syntax tree, or None when it does not parse (the bundle check names that file)."""
    try:
        return ast.parse(data.decode())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
