"""What one audited call keeps, slot by slot: a row of 64-bit words, the window's parameters first (philox.PARAMS
words), then pieces of the call's inputs (copied before the call) and of its outputs (after it), each on a word.

Three kinds, so that the validator can recompute every entry with its slot's own fp32 reference:
- rowwise (activation and norm slots): a window of `rows` consecutive rows of every row-wise argument, and the whole
  of the others (the norm weight);
- prefill (attention.prefill): one request b and KV head h, a window of at most `rows` of its new tokens and their
  whole causal context (its cached tokens, then its new tokens before the window), recast as a one-request call;
- decode (attention.decode): one request b and KV head h, its query heads and its whole context.
A request whose context passes `context` tokens is not kept (its parameters say so), the same in every engine. The
parameters are drawn in the tap from the keyed WINDOW words and the call's own offsets, never on the host: no call is
synced or treated differently from another. The context piece is last, so an entry's unused tail is plaintext zeros
that need not travel.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from ..slots import DTYPES, Role, SlotSpec
from .philox import PARAMS

MAX_ENTRY_BYTES = 5 << 19
"""One entry's row at most: wide row-wise calls keep fewer rows, and attention's context is cut to fit."""


@dataclass(frozen=True)
class Piece:
    """One tensor of an entry: its name in the recast call, the slot argument it is cut from, its shape."""

    name: str
    source: str
    output: bool
    shape: tuple[int, ...]
    word: int
    """First 64-bit word in the row."""
    words: int
    along: bool = False
    """A window of the source's rows (a row-wise argument), not all of it."""


@dataclass(frozen=True)
class Layout:
    """The row of one stratum of calls (a slot at one set of sizes, dtype and scalars): its pieces and length."""

    slot: str
    kind: str
    dims: tuple[tuple[str, int], ...]
    dtype: str
    scalars: tuple[tuple[str, float], ...]
    rows: int
    context: int
    pieces: tuple[Piece, ...]
    words: int

    @property
    def ring(self) -> int:
        """The stratum's 32-bit id, the same in every engine: the keyed words' third counter."""
        text = repr((self.slot, self.dims, self.dtype, self.scalars, self.rows, self.context))
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")

    @property
    def dim(self) -> dict[str, int]:
        return dict(self.dims)

    def piece(self, name: str) -> Piece:
        return next(p for p in self.pieces if p.name == name)


@functools.cache
def tap_words(layout: Layout, output: bool) -> np.ndarray:
    """The row's words a tap seals: the parameters and input pieces (the pre tap, and the recheck that re-reads them
    after the call), or the output pieces (the post tap)."""
    got = [] if output else [np.arange(PARAMS, dtype=np.uint64)]
    got += [np.arange(p.word, p.word + p.words, dtype=np.uint64) for p in layout.pieces if p.output == output]
    return np.concatenate(got)


def plain_dims(dims: Mapping[str, int]) -> dict[str, int]:
    """The call's sizes by name: a dim bound through an offset shape ("B+1", as the router binds it) by its own."""
    out = {}
    for k, v in dims.items():
        name, _, plus = k.partition("+")
        out[name.strip()] = v - int(plus) if plus.strip().isdigit() else v
    return out


def layout_for(
    spec: SlotSpec, dims: Mapping[str, int], dtype: str, scalars: Mapping[str, float], rows: int, context: int
) -> Layout | None:
    """The stratum's row; None for a slot the audit cannot keep (no `audit` site). `dims` are plain (`plain_dims`)."""
    kind = spec.audit.kind if spec.audit is not None else None
    if kind is None or dtype not in spec.dtypes:
        return None
    esize = DTYPES[dtype].itemsize
    if kind == "rowwise":
        args = [a for a in spec.args if a.role in (Role.INPUT, Role.OUTPUT)]
        along = [a for a in args if a.shape[0] == spec.count_dim]
        fixed = sum(math.prod(spec.shape_of(a, dims)) for a in args if a not in along) * esize + 8 * PARAMS
        per_row = sum(spec.shape_of(a, dims)[-1] for a in along) * esize
        r = max(1, min(rows, dims[spec.count_dim], (MAX_ENTRY_BYTES - fixed) // per_row))
        shapes = [
            (
                a.name,
                a.name,
                a.role is Role.OUTPUT,
                (r, *spec.shape_of(a, dims)[1:]) if a in along else spec.shape_of(a, dims),
                a in along,
            )
            for a in sorted(args, key=lambda a: a.role is Role.OUTPUT)
        ]
    else:
        g, d = dims["Hq"] // dims["Hkv"], dims["D"]
        r = 1 if kind == "decode" else rows
        small = [("q", "q", False, (r, g, d), True)]
        if kind == "prefill":
            small += [("k", "k", False, (r, 1, d), True), ("v", "v", False, (r, 1, d), True)]
        small.append(("out", "out", True, (r, g, d), True))
        used = sum(math.prod(s[3]) for s in small) * esize + 8 * PARAMS
        c = max(0, min(context, (MAX_ENTRY_BYTES - used) // (2 * d * esize)))
        shapes = [*small, ("kv", "k_buffer", False, (c, 2, d), False)]
    pieces, at = [], PARAMS
    for name, source, output, shape, along_rows in shapes:
        n = -(-math.prod(shape) * esize // 8)
        pieces.append(Piece(name, source, output, tuple(shape), at, n, along_rows))
        at += n
    return Layout(
        spec.name,
        kind,
        tuple(sorted(dims.items())),
        dtype,
        tuple(sorted((k, float(v)) for k, v in scalars.items())),
        r,
        pieces[-1].shape[0] if kind != "rowwise" else 0,
        tuple(pieces),
        at,
    )


def window(layout: Layout, drawn: tuple[int, int, int, int], t: Mapping[str, torch.Tensor]) -> list[int]:
    """The window's parameters (PARAMS words, the first one 1 when the call is kept whole) from the keyed WINDOW
    words and the call's tensors; what the CUDA tap computes on the device, here on the host (CPU engines)."""
    w0, w1, w2, _ = drawn
    dim, out = layout.dim, [0] * PARAMS
    if layout.kind == "rowwise":
        total, r = dim["T"], layout.rows
        out[:4] = [1, w0 % (total - r + 1), r, total]
        return out
    hkv, c = dim["Hkv"], layout.context
    if layout.kind == "decode":
        batch = t["q"].shape[0]
        b, head = w0 % batch, w1 % hkv
        p0, p1 = (int(x) for x in t["kv_indptr"][b : b + 2].tolist())
        length = p1 - p0
        out[:5] = [int(1 <= length <= c), b, head, length, p0]
        return out
    batch = t["qo_indptr"].shape[0] - 1
    b, head = w0 % batch, w1 % hkv
    q0, q1 = (int(x) for x in t["qo_indptr"][b : b + 2].tolist())
    p0, p1 = (int(x) for x in t["kv_indptr"][b : b + 2].tolist())
    new, cached = q1 - q0, p1 - p0
    r = min(layout.rows, new)
    ok = new >= 1 and cached >= 0 and c - cached >= 0
    i0 = w2 % (min(new - r, c - cached) + 1) if ok else 0
    out[:10] = [int(ok), b, head, i0, r, new, cached, cached + i0, q0, p0]
    return out


def gather(layout: Layout, params: list[int], t: Mapping[str, torch.Tensor], output: bool) -> dict[str, torch.Tensor]:
    """The pieces of the inputs (or outputs) a kept call holds under these parameters, zero-padded to their shapes
    (CPU engines; the CUDA tap gathers the same elements on the device)."""
    out = {}
    for p in layout.pieces:
        if p.output != output:
            continue
        buf = torch.zeros(p.shape, dtype=DTYPES[layout.dtype])
        if params[0]:
            _fill(layout, params, p, t, buf)
        out[p.name] = buf
    return out


def _fill(layout: Layout, params: list[int], p: Piece, t: Mapping[str, torch.Tensor], buf: torch.Tensor) -> None:
    src = t[p.source]
    if layout.kind == "rowwise":
        _, start, r, _ = params[:4]
        buf.copy_(src.reshape(-1, src.shape[-1])[start : start + r] if p.along else src)
        return
    g = layout.dim["Hq"] // layout.dim["Hkv"]
    if layout.kind == "decode":
        _, b, head, length, p0 = params[:5]
        if p.name == "kv":
            pages = t["kv_indices"][p0 : p0 + length].long()
            buf[:length, 0] = t["k_buffer"][pages, head]
            buf[:length, 1] = t["v_buffer"][pages, head]
        else:
            buf[0] = src[b, head * g : (head + 1) * g]
        return
    _, b, head, i0, r, _, cached, prefix, q0, p0 = params[:10]
    rows = slice(q0 + i0, q0 + i0 + r)
    if p.name == "kv":
        pages = t["kv_indices"][p0 : p0 + cached].long()
        for slot, pool, new in ((0, t["k_buffer"], t["k"]), (1, t["v_buffer"], t["v"])):
            buf[:cached, slot] = pool[pages, head]
            buf[cached:prefix, slot] = new[q0 : q0 + prefix - cached, head]
    elif p.name in ("q", "out"):
        buf[:r] = src[rows, head * g : (head + 1) * g]
    else:
        buf[:r, 0] = src[rows, head]


def to_words(layout: Layout, params: list[int], pieces: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """The plaintext row (int64 words): parameters, then each piece's bytes at its word (others left zero)."""
    row = torch.zeros(layout.words, dtype=torch.int64)
    row[:PARAMS] = torch.tensor(params, dtype=torch.int64)
    for p in layout.pieces:
        if p.name in pieces:
            raw = pieces[p.name].contiguous().view(-1).view(torch.uint8)
            padded = torch.zeros(8 * p.words, dtype=torch.uint8)
            padded[: raw.numel()] = raw
            row[p.word : p.word + p.words] = padded.view(torch.int64)
    return row


def recast(layout: Layout, row: torch.Tensor) -> tuple[dict, dict, tuple[int, int, int]] | str:
    """The validator's view of an opened row: (inputs, outputs, rows) of the call the slot's reference recomputes,
    `rows` being (first row, rows, rows of the call) or, for attention, (first new token, tokens, new tokens); or why
    the parameters contradict the layout (the entry is refused). A row not kept whole is the caller's to skip."""
    params, dtype = [int(x) for x in row[:PARAMS].tolist()], DTYPES[layout.dtype]
    piece = {p.name: _unpack(row, p, dtype) for p in layout.pieces}
    dim = layout.dim
    if layout.kind == "rowwise":
        _, start, r, total = params[:4]
        if r != layout.rows or total != dim["T"] or not 0 <= start <= total - r:
            return f"window {params[1:4]} does not fit the call"
        ins = {p.source: piece[p.name] for p in layout.pieces if not p.output}
        outs = {p.source: piece[p.name] for p in layout.pieces if p.output}
        return ins, outs, (start, r, total)
    kv = piece["kv"]
    if layout.kind == "decode":
        _, b, head, length, _ = params[:5]
        if not (0 <= b < dim["B"] and 0 <= head < dim["Hkv"] and 1 <= length <= layout.context):
            return f"request {b}, head {head}, length {length} do not fit the call"
        ins = {"q": piece["q"], "k_buffer": kv[:length, 0:1], "v_buffer": kv[:length, 1:2]}
        ins |= {"kv_indptr": torch.tensor([0, length], dtype=torch.int32), "kv_indices": torch.arange(length)}
        return ins, {"out": piece["out"]}, (b, 1, dim["B"])
    _, b, head, i0, r, new, cached, prefix, _, _ = params[:10]
    if not (
        0 <= b < dim["B"]
        and 0 <= head < dim["Hkv"]
        and 1 <= r <= layout.rows
        and r <= new <= dim["T"]
        and 0 <= i0 <= new - r
        and 0 <= cached
        and prefix == cached + i0 <= layout.context
    ):
        return f"window {params[1:8]} does not fit the call"
    pool = (kv[:prefix, 0:1], kv[:prefix, 1:2]) if prefix else (torch.zeros(1, 1, dim["D"], dtype=dtype),) * 2
    ins = {"q": piece["q"][:r], "k": piece["k"][:r], "v": piece["v"][:r], "k_buffer": pool[0], "v_buffer": pool[1]}
    ins |= {
        "qo_indptr": torch.tensor([0, r], dtype=torch.int64),
        "kv_indptr": torch.tensor([0, prefix], dtype=torch.int32),
        "kv_indices": torch.arange(prefix),
    }
    return ins, {"out": piece["out"][:r]}, (i0, r, new)


def _unpack(row: torch.Tensor, p: Piece, dtype: torch.dtype) -> torch.Tensor:
    raw = row[p.word : p.word + p.words].contiguous().view(torch.uint8)[: math.prod(p.shape) * dtype.itemsize]
    return raw.view(dtype).reshape(p.shape).clone()
