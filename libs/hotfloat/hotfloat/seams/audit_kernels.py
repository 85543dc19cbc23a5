"""The audit's two taps for each kind of slot, as Triton kernels (hotfloat.seams.audit_triton launches them): `pre`
before the call (the execution number, the keyed window, the sealed parameters and input pieces into the stage row)
and again after it into the recheck row (the inputs as the call left them), then `post` (the keyed decision, the
stage and the recheck's MAC partials copied into the kept or trash row, the sealed output pieces, the head and the
count). None specializes on sizes, strides or alignments (`do_not_specialize`), so one compiled variant per
kind serves every call."""

from __future__ import annotations

import triton
import triton.language as tl

from .audit_device import (
    block,
    context_piece,
    copy_stage,
    decide,
    draw_words,
    finish,
    heads_piece,
    pack,
    param,
    params_vector,
    rows_piece,
    seal,
    store_params,
    window_decode,
    window_prefill,
    window_rows,
    DATA,
    PARAMS,
    PB,
)


@triton.jit(do_not_specialize=list(range(32)))  # every argument before the constexprs
def rowwise_pre(key, ring, state, head, data, macs, words_n, parts_n, total, rows, x0, x0s0, x0s1, x0n, x0w,
    x0word, x0words, x1, x1s0, x1s1, x1n, x1w, x1word, x1words, x2, x2s0, x2s1, x2n, x2w, x2word, x2words, stage,
    N_IN: tl.constexpr, A0: tl.constexpr, A1: tl.constexpr, A2: tl.constexpr, BITS: tl.constexpr,
    EPW: tl.constexpr):  # fmt: skip
    pid, blk, nb = tl.program_id(0), tl.program_id(1), tl.num_programs(1)
    e = tl.load(state) + 1
    start = window_rows(key, e, ring, rows, total)
    row = data + stage * words_n
    mrow = macs + stage * parts_n
    part = pid * nb + blk
    if pid == 0:
        if blk == 0:
            tl.store(head + stage * 2, e)
            store_params(
                params_vector(1 + 0 * e, start, rows + 0 * e, total + 0 * e, 0, 0, 0, 0, 0, 0),
                key,
                e,
                ring,
                row,
                mrow,
                part,
            )
        else:
            tl.store(mrow + part, 0 * e)
    elif pid == 1:
        idx, m, el = block(blk, x0word, x0words, EPW)
        vals = rows_piece(x0, x0s0, x0s1, el, x0n, x0w, start, A0, BITS)
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)
    elif pid == 2:
        if N_IN > 1:
            idx, m, el = block(blk, x1word, x1words, EPW)
            vals = rows_piece(x1, x1s0, x1s1, el, x1n, x1w, start, A1, BITS)
            seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)
    else:
        if N_IN > 2:
            idx, m, el = block(blk, x2word, x2words, EPW)
            vals = rows_piece(x2, x2s0, x2s1, el, x2n, x2w, start, A2, BITS)
            seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)


@triton.jit(do_not_specialize=list(range(27)))  # every argument before the constexprs
def rowwise_post(key, ring, state, head, data, macs, words_n, parts_n, total, rows, routed, pre_parts, out_lo,
    out_hi, y0, y0s0, y0s1, y0w, y0word, y0words, y1, y1s0, y1s1, y1w, y1word, y1words, keep, N_OUT: tl.constexpr,
    BITS: tl.constexpr, EPW: tl.constexpr):  # fmt: skip
    pid, blk, nb = tl.program_id(0), tl.program_id(1), tl.num_programs(1)
    stage = keep + 1
    e = tl.load(head + stage * 2)
    dest = decide(key, e, tl.load(state + 1), ring, keep)
    start = window_rows(key, e, ring, rows, total)
    row = data + dest * words_n
    mrow = macs + dest * parts_n
    part = pre_parts + (pid - 1) * nb + blk
    if pid == 0:
        copy_stage(data, words_n, stage, dest, blk, out_lo, out_hi, words_n)
        if blk == 0:
            finish(key, ring, state, head, macs, parts_n, pre_parts, stage, dest, e, routed)
    elif pid == 1:
        idx, m, el = block(blk, y0word, y0words, EPW)
        vals = rows_piece(y0, y0s0, y0s1, el, rows, y0w, start, True, BITS)
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)
    else:
        if N_OUT > 1:
            idx, m, el = block(blk, y1word, y1words, EPW)
            vals = rows_piece(y1, y1s0, y1s1, el, rows, y1w, start, True, BITS)
            seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)


@triton.jit(do_not_specialize=list(range(44)))  # every argument before the constexprs
def attn_pre(key, ring, state, head, data, macs, words_n, parts_n, stage, batch, hkv, g, d, rows, context, heads,
    total, pool, npages, q, qs0, qs1, qs2, kn, ns0, ns1, ns2, vn, kb, vb, ps0, ps1, ps2, qo, kvp, pages, qword,
    qwords, kword, kwords, vword, vwords, cword, cwords, KIND: tl.constexpr, BITS: tl.constexpr, EPW: tl.constexpr):  # fmt: skip
    pid, blk, nb = tl.program_id(0), tl.program_id(1), tl.num_programs(1)
    e = tl.load(state) + 1
    if KIND == 2:
        ok, b, hd, length, p0 = window_decode(key, e, ring, kvp, batch, hkv, context)
        params = params_vector(ok, b, hd, length, p0, 0, 0, 0, 0, 0)
        row0, nrows, cached, prefix, q0 = b, ok, length * ok, length * ok, 0 * e
    else:
        ok, b, hd, i0, r, new, cached, prefix, q0, p0 = window_prefill(key, e, ring, qo, kvp, batch, hkv, rows, context)
        params = params_vector(ok, b, hd, i0, r, new, cached, prefix, q0, p0)
        row0, nrows, cached, prefix = q0 + i0, r * ok, cached * ok, prefix * ok
    row = data + stage * words_n
    mrow = macs + stage * parts_n
    part = pid * nb + blk
    if pid == 0:
        if blk == 0:
            tl.store(head + stage * 2, e)
            store_params(params, key, e, ring, row, mrow, part)
        else:
            tl.store(mrow + part, 0 * e)
    elif pid == 1:
        idx, m, el = block(blk, qword, qwords, EPW)
        vals = heads_piece(q, qs0, qs1, qs2, el, row0, nrows, g, d, hd, total, heads, BITS)
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)
    elif pid == 2 and KIND == 1:
        idx, m, el = block(blk, kword, kwords, EPW)
        vals = heads_piece(kn, ns0, ns1, ns2, el, row0, nrows, 1, d, hd, total, hkv, BITS)
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)
    elif pid == 3 and KIND == 1:
        idx, m, el = block(blk, vword, vwords, EPW)
        vals = heads_piece(vn, ns0, ns1, ns2, el, row0, nrows, 1, d, hd, total, hkv, BITS)
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)
    else:
        idx, m, el = block(blk, cword, cwords, EPW)
        vals = context_piece(
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
            hd,
            cached,
            prefix,
            p0,
            q0,
            pool,
            total,
            npages,
            BITS,
        )
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, row, mrow, part)


@triton.jit(do_not_specialize=list(range(21)))  # every argument before the constexprs
def attn_post(key, ring, state, head, data, macs, words_n, parts_n, keep, g, d, heads, total, routed, pre_parts,
    out, os0, os1, os2, oword, owords, KIND: tl.constexpr, BITS: tl.constexpr, EPW: tl.constexpr):  # fmt: skip
    pid, blk = tl.program_id(0), tl.program_id(1)
    stage = keep + 1
    e = tl.load(head + stage * 2)
    dest = decide(key, e, tl.load(state + 1), ring, keep)
    if pid == 0:
        copy_stage(data, words_n, stage, dest, blk, oword, oword + owords, words_n)
        if blk == 0:
            finish(key, ring, state, head, macs, parts_n, pre_parts, stage, dest, e, routed)
    else:
        i = tl.arange(0, PB)
        x0, x1, _, _ = draw_words(key, i, e, ring, DATA)
        params = tl.load(data + stage * words_n + i, mask=i < PARAMS, other=0) ^ (x0 | (x1 << 32))
        ok, b, hd = param(params, 0), param(params, 1), param(params, 2)
        if KIND == 2:
            row0, nrows = b, ok
        else:
            row0, nrows = param(params, 8) + param(params, 3), param(params, 4) * ok
        idx, m, el = block(blk, oword, owords, EPW)
        vals = heads_piece(out, os0, os1, os2, el, row0, nrows, g, d, hd, total, heads, BITS)
        seal(pack(vals, BITS, EPW), idx, m, key, e, ring, data + dest * words_n, macs + dest * parts_n, pre_parts + blk)
