"""What `hotfloat bundle import` reads and edits in a Cacheon bundle's kernel sources, apart from its manifest and
metadata (cacheon.py): the entry's parameters against the slot's call, the dropped setup hook's function, whether
Triton's interpreter can run the kernels so the op may also claim cpu, and outputs written at an input's row stride."""

from __future__ import annotations

import ast

from ..errors import InputError
from ..slots import SLOTS, Role
from .interpret import interpreter_blocker, uses_triton


def _function(files: dict[str, bytes], source: str | None, name: str | None) -> tuple[str, ast.FunctionDef] | None:
    """`source`'s text and its top-level function `name`, or None when either is missing or does not parse (the
    bundle check that follows names a missing or broken source)."""
    try:
        text = files[source].decode()
        return text, next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    except (KeyError, TypeError, UnicodeDecodeError, SyntaxError, ValueError, StopIteration):
        return None


def check_call(files: dict[str, bytes], op: dict, where: str) -> None:
    """The entry must take the slot's arguments, in order: an entry written for another call is refused with the
    difference named, before any verification shape fails on it (Cacheon calls that an adapter can serve were
    rewritten to the adapter before this: cacheon_adapters)."""
    found = _function(files, op.get("source"), op.get("entry"))
    fn = found[1] if found else None
    if fn is None or fn.args.vararg is not None:
        return
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    slot = SLOTS[op["slot"]]
    if len(params) != len(slot.args):
        raise InputError(
            f"{where}: {op['source']}: {op['entry']}({', '.join(params)}) takes {len(params)} arguments "
            f"but hotfloat calls {slot.signature()} ({len(slot.args)} arguments in this order); rewrite "
            "the entry to the slot's call"
        )


def drop_function(files: dict[str, bytes], source: str, name: str, note) -> None:
    """Removes the dropped setup hook's top-level function from the source, so its engine patch does not stay
    behind for scan to refuse; the kernel's own functions are left as written."""
    if (found := _function(files, source, name)) is None:
        return
    text, fn = found
    lines = text.splitlines(keepends=True)
    start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)]) - 1
    files[source] = "".join(lines[:start] + lines[fn.end_lineno :]).rstrip("\n").encode() + b"\n"
    note(name, f"def {name} (lines {start + 1}-{fn.end_lineno})", "(removed with the setup hook)", file=source)


def on_cpu(files: dict[str, bytes], entry: dict, where: str, note) -> None:
    """Adds cpu to a Triton op built for GPUs only when Triton's interpreter can run its kernels, so `verify --device
    cpu` checks it instead of answering N/A; says why not otherwise."""
    archs = entry["architectures"]
    if "cpu" in archs or not uses_triton(files, entry["source"]):
        return
    blocker = interpreter_blocker(files)
    if blocker:
        note(where, " ".join(archs), f"(cpu not added: {blocker}, which TRITON_INTERPRET cannot run)")
        return
    entry["architectures"] = ["cpu", *archs]
    note(where, " ".join(archs), f"cpu {' '.join(archs)} (added: runs under TRITON_INTERPRET)")


def row_stride_warning(files: dict[str, bytes], op: dict) -> str | None:
    """An entry that reads an input's row stride but never an output's writes the output at the input's layout (as
    Cacheon, whose outputs are shaped like x, lets it): hotfloat's outputs carry their own padded row stride, so such
    a kernel imports cleanly and FAILs every row. Said at import, with the fix, before verify."""
    slot = SLOTS[op["slot"]]
    found = _function(files, op.get("source"), op.get("entry"))
    if found is None or not slot.strided_outputs:
        return None
    fn = found[1]
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    role = {p: a.role for p, a in zip(params, slot.args, strict=False)}
    origin = {p: p for p in role}
    for node in sorted((n for n in ast.walk(fn) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        if (source := origin.get(_root(node.value))) is not None:
            origin.update((t.id, source) for t in node.targets if isinstance(t, ast.Name))
    read = {
        origin[name]
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "stride"
        if (name := _root(n.func.value)) in origin
    }
    inputs = [p for p in params if p in read and role[p] is Role.INPUT]
    unread = [p for p in params if p not in read and role.get(p) is Role.OUTPUT]
    if not (inputs and unread):
        return None
    return (
        f"{op['source']}: {op['entry']} reads the row stride of {', '.join(map(repr, inputs))} but never of "
        f"{', '.join(map(repr, unread))}: hotfloat passes outputs with their own padded row stride, so writing them at "
        f"an input's fails every row; pass {unread[0]}.stride(0) to the kernel for its rows"
    )


def _root(node: ast.AST) -> str | None:
    """The variable an expression starts from (`out` in `out.reshape(-1, h)[0]`), or None."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
