"""Paged causal prefill (extend) attention in one Triton kernel, flash-attention style.

One program per (block of new tokens, KV head). A block holds BLOCK_M new tokens of one request times every query head
of the KV head's GQA group, packed as the rows of one tile, so each K and V tile is loaded once for the whole group
and the group's heads share one tl.dot. The program walks the request's cached prefix through the page table, then
its own new tokens up to the block's last one (the causal mask aligned to the end of the sequence), keeping an online
softmax in fp32 (base 2).

Blocks are laid out without reading the lengths on the host: request b's blocks start at qo_indptr[b] // BLOCK_M + b,
which leaves room for all of them, so a grid of T // BLOCK_M + B blocks covers every request and each program finds
its request by a binary search over qo_indptr. No host sync, so the op can be captured in a CUDA graph; the few spare
blocks exit at once. The CPU interpreter's tl.dot mishandles bf16 operands, so there the tiles are widened to fp32
first (same result: the GPU's bf16 dot accumulates in fp32 too).
"""

import triton
import triton.language as tl


@triton.jit
def _prefill_kernel(q_ptr, k_ptr, v_ptr, kb_ptr, vb_ptr, qo_ptr, kv_ptr, idx_ptr, o_ptr, scale, n_req, n_search,
                    sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, skb_p, skb_h, svb_p, svb_h, so_t, so_h,
                    GROUP: tl.constexpr, GROUP_P: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    D: tl.constexpr, BLOCK_D: tl.constexpr, DOT_F32: tl.constexpr):
    blk = tl.program_id(0)
    kv_head = tl.program_id(1)
    lo = blk * 0
    hi = blk * 0 + n_req - 1  # a tensor even when n_req is specialised to 1
    for _ in range(n_search):  # the last request whose first block is at or before this one
        mid = (lo + hi + 1) // 2
        ok = tl.load(qo_ptr + mid).to(tl.int32) // BLOCK_M + mid <= blk
        lo = tl.where(ok, mid, lo)
        hi = tl.where(ok, hi, mid - 1)
    req = lo
    q_start = tl.load(qo_ptr + req).to(tl.int32)  # the engine's qo_indptr is int64; token counts fit in int32
    n_new = tl.load(qo_ptr + req + 1).to(tl.int32) - q_start
    m0 = (blk - (q_start // BLOCK_M + req)) * BLOCK_M
    live = m0 < n_new
    kv_start = tl.load(kv_ptr + req)
    n_cached = tl.where(live, tl.load(kv_ptr + req + 1) - kv_start, 0)
    new_hi = tl.where(live, tl.minimum(n_new, m0 + BLOCK_M), 0)

    rows = tl.arange(0, BLOCK_M * GROUP_P)
    tok = m0 + rows // GROUP_P
    head = kv_head * GROUP + rows % GROUP_P
    row_ok = (tok < n_new) & (rows % GROUP_P < GROUP)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q_rows = (q_start + tok).to(tl.int64)
    q = tl.load(q_ptr + q_rows[:, None] * sq_t + head[:, None] * sq_h + offs_d[None, :],
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)
    qk_scale = scale * 1.4426950408889634  # log2(e): the softmax runs in base 2

    m_i = tl.full([BLOCK_M * GROUP_P], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M * GROUP_P], tl.float32)
    acc = tl.zeros([BLOCK_M * GROUP_P, BLOCK_D], tl.float32)
    for n in range(0, n_cached, BLOCK_N):  # the cached prefix: every new token sees all of it
        offs_n = n + tl.arange(0, BLOCK_N)
        n_ok = offs_n < n_cached
        page = tl.load(idx_ptr + kv_start + offs_n, mask=n_ok, other=0)
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(kb_ptr + page[:, None] * skb_p + kv_head * skb_h + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(vb_ptr + page[:, None] * svb_p + kv_head * svb_h + offs_d[None, :], mask=kv_mask, other=0.0)
        if DOT_F32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    for n in range(0, new_hi, BLOCK_N):  # the request's own new tokens, up to the block's last one
        offs_n = n + tl.arange(0, BLOCK_N)
        n_ok = offs_n < new_hi
        kv_rows = (q_start + offs_n).to(tl.int64)
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + kv_rows[:, None] * sk_t + kv_head * sk_h + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + kv_rows[:, None] * sv_t + kv_head * sv_h + offs_d[None, :], mask=kv_mask, other=0.0)
        if DOT_F32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(n_ok[None, :] & (offs_n[None, :] <= tok[:, None]), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(o_ptr + q_rows[:, None] * so_t + head[:, None] * so_h + offs_d[None, :],
             o.to(o_ptr.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


def prefill(q, k, v, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, out, sm_scale):
    """Writes each new token's causal attention over its request's prefix and new tokens into out (any strides);
    inputs are read only."""
    tokens, q_heads, d = q.shape
    kv_heads = k.shape[1]
    if any(t.stride(2) != 1 for t in (q, k, v, k_buffer, v_buffer, out)):
        raise ValueError("prefill needs unit stride along the head dim")
    batch = qo_indptr.shape[0] - 1
    if tokens == 0 or batch == 0:
        return None
    group = q_heads // kv_heads
    group_p = triton.next_power_of_2(group)
    on_gpu = q.is_cuda
    block_m = max(1, (128 if on_gpu else 32) // group_p)
    grid = (tokens // block_m + batch, kv_heads)
    _prefill_kernel[grid](
        q, k, v, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices, out, float(sm_scale), batch,
        batch.bit_length(), q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1), out.stride(0), out.stride(1),
        GROUP=group, GROUP_P=group_p, BLOCK_M=block_m, BLOCK_N=64 if on_gpu else 16, D=d,
        BLOCK_D=triton.next_power_of_2(d), DOT_F32=not on_gpu, num_warps=8 if d > 64 else 4, num_stages=2)
    return None
