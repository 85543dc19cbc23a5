"""Split-KV (flash-decoding) paged decode attention in two Triton passes.

Decode gives one query per request, so one program per (request, head) leaves most of the GPU idle on long
contexts. Pass 1 cuts every request's pages into SPLITS chunks and runs one program per (request, KV head, chunk):
it loads each K and V tile once for all the query heads of its GQA group (one tl.dot for the group) and keeps an
online softmax in fp32, writing the chunk's normalised output and log-sum-exp. Pass 2 merges the chunks per
(request, head) by their log-sum-exp. The split count is fixed from the batch shape alone (never from the lengths,
which live on the device), so the launch needs no host sync and the op can be captured in a CUDA graph; chunks
beyond a short request's length exit at once. The CPU interpreter's tl.dot mishandles bf16 operands, so there the
tiles are widened to fp32 first (same result: the GPU's bf16 dot accumulates in fp32 too).
"""

import functools

import torch
import triton
import triton.language as tl


@triton.jit
def _split_kernel(q_ptr, k_ptr, v_ptr, indptr_ptr, indices_ptr, mid_o_ptr, mid_lse_ptr, scale,
                  sq_b, sq_h, sk_p, sk_h, sv_p, sv_h, sm_b, sm_h, sm_s, sl_b, sl_h,
                  GROUP: tl.constexpr, SPLITS: tl.constexpr, D: tl.constexpr, BLOCK_H: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, DOT_F32: tl.constexpr):
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    start = tl.load(indptr_ptr + b).to(tl.int64)
    length = tl.load(indptr_ptr + b + 1).to(tl.int64) - start
    chunk = tl.cdiv(tl.cdiv(length, SPLITS), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, length)

    offs_h = tl.arange(0, BLOCK_H)
    heads = kv_head * GROUP + offs_h
    h_ok = offs_h < GROUP
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q = tl.load(q_ptr + b * sq_b + heads[:, None] * sq_h + offs_d[None, :], mask=h_ok[:, None] & d_ok[None, :],
                other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)

    m = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_D], tl.float32)
    for n in range(lo, hi, BLOCK_N):
        offs_n = n + tl.arange(0, BLOCK_N)
        n_ok = offs_n < hi
        page = tl.load(indices_ptr + start + offs_n, mask=n_ok, other=0)
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + page[:, None] * sk_p + kv_head * sk_h + offs_d[None, :], mask=kv_mask, other=0.0)
        if DOT_F32:
            k = k.to(tl.float32)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        v = tl.load(v_ptr + page[:, None] * sv_p + kv_head * sv_h + offs_d[None, :], mask=kv_mask, other=0.0)
        if DOT_F32:
            v = v.to(tl.float32)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l = l * alpha + tl.sum(p, 1)
        m = m_new

    live = l > 0
    o = acc / tl.where(live, l, 1.0)[:, None]
    lse = tl.where(live, m + tl.log(tl.where(live, l, 1.0)), float("-inf"))
    tl.store(mid_o_ptr + b * sm_b + heads[:, None] * sm_h + split * sm_s + offs_d[None, :], o,
             mask=h_ok[:, None] & d_ok[None, :])
    tl.store(mid_lse_ptr + b * sl_b + heads * sl_h + split, lse, mask=h_ok)


@triton.jit
def _merge_kernel(mid_o_ptr, mid_lse_ptr, out_ptr, sm_b, sm_h, sm_s, sl_b, sl_h, so_b, so_h,
                  SPLITS: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs_s = tl.arange(0, SPLITS)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    lse = tl.load(mid_lse_ptr + b * sl_b + h * sl_h + offs_s)
    w = tl.exp(lse - tl.max(lse, 0))  # empty chunks carry -inf: weight 0; chunk 0 is never empty (length >= 1)
    o = tl.load(mid_o_ptr + b * sm_b + h * sm_h + offs_s[:, None] * sm_s + offs_d[None, :], mask=d_ok[None, :],
                other=0.0)
    res = tl.sum(w[:, None] * o, 0) / tl.sum(w, 0)
    tl.store(out_ptr + b * so_b + h * so_h + offs_d, res.to(out_ptr.dtype.element_ty), mask=d_ok)


@functools.lru_cache(maxsize=None)
def _multiprocessors(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _splits(batch: int, kv_heads: int, device: torch.device) -> int:
    """Enough (request, KV head, chunk) programs to fill the GPU about four times over, at most 64 chunks; the CPU
    interpreter pays per program, so it takes 4 (enough to exercise the merge). Never 1: the merge ranges over it."""
    if device.type != "cuda":
        return 4
    want = triton.cdiv(4 * _multiprocessors(device.index or 0), batch * kv_heads)
    return max(2, min(64, triton.next_power_of_2(want)))


def decode(q, k_buffer, v_buffer, kv_indptr, kv_indices, out, sm_scale):
    """Writes softmax(sm_scale * q . K) @ V per request and head into out (any strides); inputs are read only."""
    batch, q_heads, d = q.shape
    kv_heads = k_buffer.shape[1]
    if q.stride(2) != 1 or k_buffer.stride(2) != 1 or v_buffer.stride(2) != 1 or out.stride(2) != 1:
        raise ValueError("decode needs unit stride along the head dim")
    if batch == 0:
        return None
    group = q_heads // kv_heads
    splits = _splits(batch, kv_heads, q.device)
    block_d = triton.next_power_of_2(d)
    mid_o = torch.empty((batch, q_heads, splits, block_d), dtype=torch.float32, device=q.device)
    mid_lse = torch.empty((batch, q_heads, splits), dtype=torch.float32, device=q.device)
    on_gpu = q.is_cuda
    _split_kernel[(batch, kv_heads, splits)](
        q, k_buffer, v_buffer, kv_indptr, kv_indices, mid_o, mid_lse, float(sm_scale),
        q.stride(0), q.stride(1), k_buffer.stride(0), k_buffer.stride(1), v_buffer.stride(0), v_buffer.stride(1),
        mid_o.stride(0), mid_o.stride(1), mid_o.stride(2), mid_lse.stride(0), mid_lse.stride(1),
        GROUP=group, SPLITS=splits, D=d, BLOCK_H=max(16, triton.next_power_of_2(group)),
        BLOCK_N=64 if on_gpu else 32, BLOCK_D=block_d, DOT_F32=not on_gpu, num_warps=4, num_stages=2)
    _merge_kernel[(batch, q_heads)](
        mid_o, mid_lse, out, mid_o.stride(0), mid_o.stride(1), mid_o.stride(2), mid_lse.stride(0),
        mid_lse.stride(1), out.stride(0), out.stride(1), SPLITS=splits, D=d, BLOCK_D=block_d, num_warps=4)
    return None
