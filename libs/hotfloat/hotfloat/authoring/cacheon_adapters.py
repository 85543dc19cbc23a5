"""Cacheon slots whose call hotfloat serves faithfully through an adapter that `hotfloat bundle import` writes into the
bundle beside the kernel: the op becomes the hotfloat slot's, its entry the adapter, which calls the Cacheon entry
exactly as Cacheon would. The adapter is bundle code like any other: scanned, verified against the hotfloat slot's
reference, and timed with the kernel it wraps.

- `attention.sdpa(q[T,Hq,D], k[S,Hkv,D], v[S,Hkv,D], out[T,Hq,D], sm_scale, causal)` attends one sequence whose last
  T of S keys belong to the queries (the causal mask is aligned to the end). One request of attention.prefill is
  exactly that, with its prefix pages then its new tokens as k and v, so the adapter calls it once per request.
- Cacheon's `attention.decode(q[B,Hq,D], k[B,S,Hkv,D], v[B,S,Hkv,D], seq_lens[B], sm_scale, out[B,Hq,D])` reads an
  unpaged, padded cache masked past each length. The adapter gathers those blocks from hotfloat's paged pool (padding
  repeats a request's last token, which the mask hides) and passes the lengths.

- Cacheon's `moe.fused_experts(x, topk_ids, topk_weights, prepared, out)` and `moe.fused_experts_reduce(..., out,
  group)` are (prepare, forward) pairs: the op's `prepare(w13, w2)` lays the expert weights out once at load and the
  entry reads its result. hotfloat runs no bundle code outside a slot call and passes the weights in SGLang's layout
  to every call, so the adapter calls prepare on every call, then the entry: correct, and slower by the layout.

The attention adapters read lengths on the host, so those ops are never graph-safe (the import says so if the metadata
claimed it); the MoE adapter reads nothing on the host and keeps the claim. An entry that takes neither Cacheon's call
nor the hotfloat slot's is refused in one line naming the slot.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from string import Template

from ..errors import InputError
from ..slots import SLOTS

_SDPA = '''\
"""Written by `hotfloat bundle import`: hotfloat's attention.prefill served by a Cacheon attention.sdpa entry,
$entry in $source,
once per request: its prefix pages and new tokens as one sequence whose last rows are the queries (Cacheon's causal
mask is aligned to the end). Lengths are read on the host: not graph-safe."""

import torch

from . import $module as cacheon


def prefill(q, k, v, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, out, sm_scale):
    qo, kv = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        new, pages = slice(qo[b], qo[b + 1]), kv_indices[kv[b] : kv[b + 1]]
        keys = torch.cat([k_buffer[pages], k[new]])
        values = torch.cat([v_buffer[pages], v[new]])
        cacheon.$entry(q[new], keys, values, out[new], float(sm_scale), True)
'''

_DECODE = '''\
"""Written by `hotfloat bundle import`: hotfloat's attention.decode served by a Cacheon attention.decode entry,
$entry in $source,
with each request's pages gathered into a padded [B, S, Hkv, D] block (S the longest length; the padding repeats the
request's last token, masked by seq_lens). The longest length is read on the host: not graph-safe."""

import torch

from . import $module as cacheon


def decode(q, k_buffer, v_buffer, kv_indptr, kv_indices, out, sm_scale):
    lengths = kv_indptr.diff().long()
    steps = torch.arange(int(lengths.max()), device=q.device)
    pages = kv_indices[kv_indptr[:-1, None].long() + torch.minimum(steps[None, :], lengths[:, None] - 1)]
    cacheon.$entry(q, k_buffer[pages], v_buffer[pages], lengths.to(torch.int32), float(sm_scale), out)
'''


_MOE = '''\
"""Written by `hotfloat bundle import`: hotfloat's $slot served by a Cacheon (prepare, forward) pair,
$prepare and $entry in $source.
Cacheon runs $prepare once at load; hotfloat passes the weights to every call and runs no bundle code outside one,
so the expert weights are laid out again on every call."""

from . import $module as cacheon


def $adapter($params):
    cacheon.$entry($call)
'''
_MOE_ARGS = "x, topk_ids, topk_weights, w13, w2, out"


@dataclass(frozen=True)
class Adapter:
    """How one Cacheon slot's entry is served as a hotfloat slot."""

    slot: str
    """The hotfloat slot the op becomes."""
    call: str
    """Cacheon's call of the entry, for messages; its arity is the number of names."""
    entry: str
    """The adapter's function, written into the bundle."""
    source: Template
    prepare: bool = False
    """The op names a load-time `prepare(w13, w2)` whose result the entry takes (Cacheon's MoE slots)."""


def _moe(slot: str, adapter: str, tail: str) -> Adapter:
    call = f"x, topk_ids, topk_weights, cacheon.$prepare(w13, w2), out{tail}"
    source = Template(_MOE).safe_substitute(slot=slot, adapter=adapter, params=_MOE_ARGS + tail, call=call)
    return Adapter(slot, f"(x, topk_ids, topk_weights, prepared, out{tail})", adapter, Template(source), prepare=True)


ADAPTERS = {
    "attention.sdpa": Adapter("attention.prefill", "(q, k, v, out, sm_scale, causal)", "prefill", Template(_SDPA)),
    "attention.decode": Adapter("attention.decode", "(q, k, v, seq_lens, sm_scale, out)", "decode", Template(_DECODE)),
    "moe.fused_experts": _moe("moe.fused_experts", "fused_experts", ""),
    "moe.fused_experts_reduce": _moe("moe.fused_experts_reduce", "fused_experts_reduce", ", group"),
}
"""Cacheon slot -> its adapter."""


def _positional(files: dict[str, bytes], source, entry) -> tuple[list[str], int, bool] | None:
    """The entry's positional parameters, how many are required and whether it takes *args; None when the source or
    the function is missing or does not parse (the bundle check that follows names that)."""
    try:
        tree = ast.parse(files[source].decode())
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry)
    except (KeyError, TypeError, UnicodeDecodeError, SyntaxError, ValueError, StopIteration):
        return None
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    return params, len(params) - len(fn.args.defaults), fn.args.vararg is not None


def adapt(files: dict[str, bytes], op: dict, where: str, note) -> dict:
    """The op as hotfloat will import it: unchanged unless its slot is one of ADAPTERS and its entry takes Cacheon's
    call, in which case the adapter is written into `files` and the op names it."""
    adapter = ADAPTERS.get(op.get("slot")) if isinstance(op.get("slot"), str) else None
    found = _positional(files, op.get("source"), op.get("entry")) if adapter else None
    if found is None:
        return op
    params, required, varargs = found
    target = SLOTS[adapter.slot]
    takes = lambda n: varargs or required <= n <= len(params)  # noqa: E731
    cacheon_arity = adapter.call.count(",") + 1
    module = PurePosixPath(op["source"])
    if op["slot"] == adapter.slot and not takes(cacheon_arity) and takes(len(target.args)):
        return op  # already written to hotfloat's call
    if not takes(cacheon_arity):
        raise InputError(
            f"{where}: {op['slot']}: {op['source']}: {op['entry']}({', '.join(params)}) takes neither Cacheon's "
            f"{op['slot']}{adapter.call} nor hotfloat's {target.signature()}, so no adapter can serve it; rewrite the "
            "entry to hotfloat's call"
        )
    if not module.stem.isidentifier():
        raise InputError(f"{where}: {op['slot']}: {op['source']} cannot be imported by an adapter (not a module name)")
    path, n = str(module.with_name(f"{module.stem}_hotfloat.py")), 2
    while path in files:
        path, n = str(module.with_name(f"{module.stem}_hotfloat{n}.py")), n + 1
    prepare = _prepare(files, op, where) if adapter.prepare else ""
    text = adapter.source.substitute(module=module.stem, entry=op["entry"], source=op["source"], prepare=prepare)
    files[path] = text.encode()
    note("adapter", "(absent)", f"hotfloat's {adapter.slot} calls {op['entry']} as Cacheon's {op['slot']}", file=path)
    if adapter.prepare:
        was = prepare if "prepare" in op else f"(absent: Cacheon's default, {prepare})"
        note(f"{where}.prepare", was, f"(removed: {path} calls {prepare}(w13, w2) on every call, then the entry)")
        op = {k: v for k, v in op.items() if k != "prepare"}
    if op["slot"] != adapter.slot:
        note(f"{where}.slot", op["slot"], f"{adapter.slot} (through the adapter {path})")
    note(f"{where}.source", op["source"], path)
    if op["entry"] != adapter.entry:
        note(f"{where}.entry", op["entry"], adapter.entry)
    if not adapter.prepare:
        _not_graph_safe(files, op.get("metadata"), note)
    return {**op, "slot": adapter.slot, "source": path, "entry": adapter.entry}


def _prepare(files: dict[str, bytes], op: dict, where: str) -> str:
    """The op's load-time layout function (Cacheon's default name is `prepare`), which must be in the entry's source."""
    name = op.get("prepare", "prepare")
    if not isinstance(name, str) or _positional(files, op["source"], name) is None:
        raise InputError(
            f"{where}: {op['slot']}: {op['entry']} takes Cacheon's `prepared` weights, but {op['source']} defines no "
            f"{name!r} to make them from (w13, w2); name it in the op's `prepare`"
        )
    return name


def _not_graph_safe(files: dict[str, bytes], rel, note) -> None:
    """An adapter reads lengths on the host, so a metadata claim of graph_safe would fail every CUDA-graph capture."""
    try:
        doc = json.loads(files[rel])
    except (KeyError, TypeError, ValueError, UnicodeDecodeError):
        return  # no metadata, or one the metadata conversion refuses with its own message
    if isinstance(doc, dict) and doc.get("graph_safe"):
        files[rel] = json.dumps({**doc, "graph_safe": False}).encode()
        note("graph_safe", "true", "false (the adapter reads lengths on the host)", file=rel)
