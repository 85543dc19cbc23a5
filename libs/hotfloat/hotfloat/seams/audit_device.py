"""The audit taps' device functions (Triton): the keyed Philox words, sealing a block of 64-bit words with its MAC
partial sum, packing elements into words, the keyed windows, the pieces a tap gathers from a call's tensors, and the
post tap's decision and bookkeeping; hotfloat.seams.audit_kernels composes them into the taps' kernels. Every index
read from the device is clamped to its tensor."""

from __future__ import annotations

import triton
import triton.language as tl

from ..audit import philox

WORDS_PER_PROGRAM = 256
"""64-bit words per program (the host sizes grids by it)."""
WB = tl.constexpr(WORDS_PER_PROGRAM)
PB = tl.constexpr(16)
"""The parameter block (PARAMS words, padded to a power of two)."""
PARAMS = tl.constexpr(philox.PARAMS)
ROUTED = tl.constexpr(philox.ROUTED)
DATA, DECISION, WINDOW = tl.constexpr(philox.DATA), tl.constexpr(philox.DECISION), tl.constexpr(philox.WINDOW)
"""Module values a kernel reads must be constexprs (a plain global is refused by the JIT compiler)."""


@triton.jit
def _u32(x):
    return ((x + tl.zeros([], dtype=tl.int64)) & 0xFFFFFFFF).to(tl.uint32)  # x may be a literal


@triton.jit
def draw_words(key, c0, e, ring, purpose: tl.constexpr):
    """Philox words (as int64 in [0, 2^32)) of counters (c0, e, ring, purpose)."""
    x0, x1, x2, x3 = tl.philox(key, _u32(c0), _u32(e), _u32(ring), _u32(tl.full([], purpose, tl.int32)))
    m = 0xFFFFFFFF
    return x0.to(tl.int64) & m, x1.to(tl.int64) & m, x2.to(tl.int64) & m, x3.to(tl.int64) & m


@triton.jit
def seal(words, idx, mask, key, e, ring, dst, mac, part):
    """Stores words (int64, plaintext) at dst[idx] sealed, and their MAC partial sum at mac[part]."""
    x0, x1, x2, x3 = draw_words(key, idx, e, ring, DATA)
    ks = x0 | (x1 << 32)
    weight = (x2 | (x3 << 32) | 1).to(tl.uint64, bitcast=True)
    tl.store(dst + idx, words ^ ks, mask=mask)
    prod = tl.where(mask, words.to(tl.uint64, bitcast=True) * weight, 0)
    tl.store(mac + part, tl.sum(prod, axis=0).to(tl.int64, bitcast=True))


@triton.jit
def bits(x, BITS: tl.constexpr):
    if BITS == 16:  # one return: the JIT compiles the code after a return in a constexpr branch too
        out = x.to(tl.int16, bitcast=True).to(tl.int64) & 0xFFFF
    else:
        out = x.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    return out


@triton.jit
def pack(vals, BITS: tl.constexpr, EPW: tl.constexpr):
    """[WB, EPW] element bits -> [WB] little-endian 64-bit words."""
    shifts = tl.arange(0, EPW).to(tl.int64) * BITS
    return tl.sum(vals << shifts[None, :], axis=1)


@triton.jit
def block(blk, word, words, EPW: tl.constexpr):
    """A program's words of a piece: (row indices, mask, element indices [WB, EPW] within the piece)."""
    local = blk * WB + tl.arange(0, WB)
    idx = word + local
    el = local[:, None] * EPW + tl.arange(0, EPW)[None, :]
    return idx, local < words, el


@triton.jit
def window_rows(key, e, ring, rows, total):
    """(ok, start, rows, total) as hotfloat.audit.layout.window draws them for a row-wise call."""
    w0, _, _, _ = draw_words(key, 0, e, ring, WINDOW)
    return w0 % tl.maximum(total - rows + 1, 1)


@triton.jit
def window_decode(key, e, ring, kv_indptr, batch, hkv, context):
    """(ok, b, head, length, p0) of a decode call."""
    w0, w1, _, _ = draw_words(key, 0, e, ring, WINDOW)
    b = w0 % batch
    p0 = tl.load(kv_indptr + b).to(tl.int64)
    length = tl.load(kv_indptr + b + 1).to(tl.int64) - p0
    return ((length >= 1) & (length <= context)).to(tl.int64), b, w1 % hkv, length, p0


@triton.jit
def window_prefill(key, e, ring, qo_indptr, kv_indptr, batch, hkv, rows, context):
    """(ok, b, head, i0, r, new, cached, prefix, q0, p0) of a prefill call."""
    w0, w1, w2, _ = draw_words(key, 0, e, ring, WINDOW)
    b = w0 % batch
    q0 = tl.load(qo_indptr + b).to(tl.int64)
    new = tl.load(qo_indptr + b + 1).to(tl.int64) - q0
    p0 = tl.load(kv_indptr + b).to(tl.int64)
    cached = tl.load(kv_indptr + b + 1).to(tl.int64) - p0
    r = tl.minimum(new, rows)
    ok = (new >= 1) & (cached >= 0) & (context - cached >= 0)
    i0 = tl.where(ok, w2 % tl.maximum(tl.minimum(new - r, context - cached) + 1, 1), 0)
    return ok.to(tl.int64), b, w1 % hkv, i0, r, new, cached, cached + i0, q0, p0


@triton.jit
def params_vector(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9):
    i = tl.arange(0, PB)
    v = tl.where(i == 0, p0, 0) + tl.where(i == 1, p1, 0) + tl.where(i == 2, p2, 0) + tl.where(i == 3, p3, 0)
    v += tl.where(i == 4, p4, 0) + tl.where(i == 5, p5, 0) + tl.where(i == 6, p6, 0) + tl.where(i == 7, p7, 0)
    return v + tl.where(i == 8, p8, 0) + tl.where(i == 9, p9, 0)


@triton.jit
def param(v, k: tl.constexpr):
    return tl.sum(tl.where(tl.arange(0, PB) == k, v, 0), axis=0)


@triton.jit
def rows_piece(src, s0, s1, el, rows, width, start, along: tl.constexpr, BITS: tl.constexpr):
    """Elements of a row-wise piece: rows start.. of a (total, width) view (`along`), or a whole 1-D input."""
    m = el < rows * width
    if along:
        ptr = src + (start + el // width) * s0 + (el % width) * s1
    else:
        ptr = src + el * s0
    return bits(tl.load(ptr, mask=m, other=0), BITS)


@triton.jit
def heads_piece(src, s0, s1, s2, el, row0, nrows, g, d, head, total, heads, BITS: tl.constexpr):
    """Elements of a (rows, g, d) piece: rows row0.. (nrows of them) of the query heads of KV head `head`."""
    r = el // (g * d)
    gi = (el // d) % g
    di = el % d
    m = r < nrows
    row = tl.minimum(tl.maximum(row0 + r, 0), total - 1)
    hq = tl.minimum(tl.maximum(head * g + gi, 0), heads - 1)
    return bits(tl.load(src + row * s0 + hq * s1 + di * s2, mask=m, other=0), BITS)


@triton.jit
def context_piece(
    kb,
    vb,
    ps0,
    ps1,
    ps2,
    kn,
    vn,
    ns0,
    ns1,
    ns2,
    pages,
    el,
    d,
    head,
    cached,
    prefix,
    p0,
    q0,
    pool,
    total,
    npages,
    BITS: tl.constexpr,
):  # k_buffer and v_buffer share strides, and so do k and v (the router checks)
    """Elements of the (context, 2, d) piece: token j's K then V, from the pool (j < cached, through the page table)
    or from the new tokens (cached <= j < prefix); zero past prefix."""
    j = el // (2 * d)
    which = (el // d) % 2
    di = el % d
    in_pool = j < cached
    in_new = (j >= cached) & (j < prefix)
    page = tl.load(pages + tl.minimum(tl.maximum(p0 + j, 0), npages - 1), mask=in_pool, other=0).to(tl.int64)
    page = tl.minimum(tl.maximum(page, 0), pool - 1)
    row = tl.minimum(tl.maximum(q0 + j - cached, 0), total - 1)
    pk = tl.load(kb + page * ps0 + head * ps1 + di * ps2, mask=in_pool & (which == 0), other=0)
    pv = tl.load(vb + page * ps0 + head * ps1 + di * ps2, mask=in_pool & (which == 1), other=0)
    nk = tl.load(kn + row * ns0 + head * ns1 + di * ns2, mask=in_new & (which == 0), other=0)
    nv = tl.load(vn + row * ns0 + head * ns1 + di * ns2, mask=in_new & (which == 1), other=0)
    return bits(pk, BITS) | bits(pv, BITS) | bits(nk, BITS) | bits(nv, BITS)


@triton.jit
def store_params(v, key, e, ring, row, macs_row, part):
    i = tl.arange(0, PB)
    seal(v, i, i < PARAMS, key, e, ring, row, macs_row, part)


@triton.jit
def decide(key, e, base, ring, keep):
    """The row execution e is kept in (Algorithm R over the round), or `keep` (the trash row); clamped to the ring."""
    n = e - base
    u0, u1, _, _ = draw_words(key, 0, e, ring, DECISION)
    row = tl.where(n <= keep, n - 1, tl.where(u0 * n < (keep.to(tl.int64) << 32), u1 % keep, keep))
    return tl.minimum(tl.maximum(row, 0), keep)


@triton.jit
def copy_stage(data, words_n, stage, row, blk, out_lo, out_hi, in_words):
    """Copies the stage's parameter and input words into `row` (the output pieces are the post tap's own)."""
    idx = blk * WB + tl.arange(0, WB)
    m = (idx < in_words) & ((idx < out_lo) | (idx >= out_hi))
    tl.store(data + row * words_n + idx, tl.load(data + stage * words_n + idx, mask=m), mask=m)


@triton.jit
def finish(key, ring, state, head, macs, parts_n, pre_parts, stage, row, e, routed):
    """The post tap's one-program work: the pre tap's MAC partials into the row, the routed flag's MAC term before
    the row's last `pre_parts`, the recheck's partials (the row after the stage) into those, its head, the count."""
    for c in range(0, pre_parts, 1024):
        i = c + tl.arange(0, 1024)
        m = i < pre_parts
        tl.store(macs + row * parts_n + i, tl.load(macs + stage * parts_n + i, mask=m), mask=m)
        again = tl.load(macs + (stage + 1) * parts_n + i, mask=m)
        tl.store(macs + row * parts_n + parts_n - pre_parts + i, again, mask=m)
    _, _, x2, x3 = draw_words(key, tl.full([], ROUTED, tl.int64), e, ring, DATA)
    term = (routed + 0 * e).to(tl.uint64, bitcast=True) * (x2 | (x3 << 32) | 1).to(tl.uint64, bitcast=True)
    tl.store(macs + row * parts_n + parts_n - pre_parts - 1, term.to(tl.int64, bitcast=True))
    tl.store(head + row * 2, e)
    tl.store(head + row * 2 + 1, routed + 0 * e)
    tl.store(state, e)
