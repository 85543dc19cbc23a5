"""Routed SwiGLU experts (moe.fused_experts) as a grouped GEMM in three Triton passes.

The (token, k) pairs are sorted by expert on the device (a stable sort of the ids, the counts by scatter_add), so
each expert's pairs are contiguous and every program of the first two passes multiplies a block of one expert's rows
by a tile of that expert's weights with tl.dot: a weight tile is read once per block of rows, not once per token.
The grid is sized for the worst case (every pair on one expert) and a program past its expert's rows returns at once,
so the launch needs no host sync and the op can be captured in a CUDA graph; experts nobody chose cost one early exit.
Pass 1 computes gate and up tiles and keeps silu(gate) * up in an fp32 scratch, pass 2 multiplies that (rounded to
the op dtype, as SGLang's kernel does) by w2 and scales it by the routing weight into a per-pair fp32 scratch, and
pass 3 sums each token's K rows into out (any row stride). fp32 runs its dots in IEEE fp32 (TF32 would miss the
fp32 tolerance); the CPU interpreter's tl.dot mishandles 16-bit operands, so there the tiles are widened first.
The hidden and intermediate sizes are constexprs: a model has one of each, and a loop over a runtime bound breaks
Triton 3.6's CPU interpreter under numpy 2.4 (the device image's pair).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _up_kernel(x_ptr, w13_ptr, order_ptr, offsets_ptr, act_ptr, sx_t, sx_h, sw_e, sw_n, sw_h,
               H: tl.constexpr, INTER: tl.constexpr, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_H: tl.constexpr,
               DOT_F32: tl.constexpr, PRECISION: tl.constexpr):
    e = tl.program_id(0)
    start = tl.load(offsets_ptr + e)
    end = tl.load(offsets_ptr + e + 1)
    row0 = start + tl.program_id(1) * BLOCK_M
    if row0 >= end:
        return
    rows = row0 + tl.arange(0, BLOCK_M)
    r_ok = rows < end
    pair = tl.load(order_ptr + rows, mask=r_ok, other=0)
    token = pair // K
    cols = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = cols < INTER
    gate = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    up = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for h0 in range(0, H, BLOCK_H):
        hs = h0 + tl.arange(0, BLOCK_H)
        h_ok = hs < H
        xt = tl.load(x_ptr + token[:, None] * sx_t + hs[None, :] * sx_h, mask=r_ok[:, None] & h_ok[None, :], other=0.0)
        w_at = w13_ptr + e * sw_e + hs[:, None] * sw_h
        w_ok = h_ok[:, None] & c_ok[None, :]
        wg = tl.load(w_at + cols[None, :] * sw_n, mask=w_ok, other=0.0)
        wu = tl.load(w_at + (cols[None, :] + INTER) * sw_n, mask=w_ok, other=0.0)
        if DOT_F32:
            xt, wg, wu = xt.to(tl.float32), wg.to(tl.float32), wu.to(tl.float32)
        gate += tl.dot(xt, wg, input_precision=PRECISION)
        up += tl.dot(xt, wu, input_precision=PRECISION)
    act = gate * tl.sigmoid(gate) * up
    tl.store(act_ptr + pair[:, None] * INTER + cols[None, :], act, mask=r_ok[:, None] & c_ok[None, :])


@triton.jit
def _down_kernel(act_ptr, w2_ptr, weights_ptr, order_ptr, offsets_ptr, y_ptr, s2_e, s2_h, s2_i, swt_t, swt_k,
                 H: tl.constexpr, INTER: tl.constexpr, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_I: tl.constexpr,
                 DOT_F32: tl.constexpr, PRECISION: tl.constexpr):
    e = tl.program_id(0)
    start = tl.load(offsets_ptr + e)
    end = tl.load(offsets_ptr + e + 1)
    row0 = start + tl.program_id(1) * BLOCK_M
    if row0 >= end:
        return
    rows = row0 + tl.arange(0, BLOCK_M)
    r_ok = rows < end
    pair = tl.load(order_ptr + rows, mask=r_ok, other=0)
    weight = tl.load(weights_ptr + (pair // K) * swt_t + (pair % K) * swt_k, mask=r_ok, other=0.0)
    cols = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = cols < H
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for i0 in range(0, INTER, BLOCK_I):
        its = i0 + tl.arange(0, BLOCK_I)
        i_ok = its < INTER
        a = tl.load(act_ptr + pair[:, None] * INTER + its[None, :], mask=r_ok[:, None] & i_ok[None, :], other=0.0)
        w = tl.load(w2_ptr + e * s2_e + cols[None, :] * s2_h + its[:, None] * s2_i, mask=i_ok[:, None] & c_ok[None, :],
                    other=0.0)
        if DOT_F32:
            w = w.to(tl.float32)
        acc += tl.dot(a.to(w.dtype), w, input_precision=PRECISION)
    y = acc * weight[:, None]
    tl.store(y_ptr + pair[:, None] * H + cols[None, :], y, mask=r_ok[:, None] & c_ok[None, :])


@triton.jit
def _combine_kernel(y_ptr, out_ptr, so_t, so_h, H, K: tl.constexpr, BLOCK_N: tl.constexpr):
    t = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = cols < H
    acc = tl.zeros([BLOCK_N], tl.float32)
    for k in range(K):
        acc += tl.load(y_ptr + (t * K + k) * H + cols, mask=c_ok, other=0.0)
    tl.store(out_ptr + t * so_t + cols * so_h, acc.to(out_ptr.dtype.element_ty), mask=c_ok)


def routed(x, topk_ids, topk_weights, w13, w2):
    """The per-pair results [T*K, H] in fp32 (routing weight applied), each token's K rows consecutive."""
    tokens, width = x.shape
    k = topk_ids.shape[1]
    experts, _, inter = w2.shape
    pairs = tokens * k
    ids = topk_ids.reshape(-1).long()
    order = torch.sort(ids, stable=True).indices
    counts = torch.zeros(experts, dtype=torch.int64, device=x.device).scatter_add_(0, ids, torch.ones_like(ids))
    offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    act = torch.empty((pairs, inter), dtype=torch.float32, device=x.device)
    y = torch.empty((pairs, width), dtype=torch.float32, device=x.device)
    on_gpu = x.is_cuda
    precision = "ieee" if x.dtype == torch.float32 else "tf32"
    block_m = 64 if on_gpu and pairs >= 16 * experts else 16
    block_n, block_k = (64, 64) if on_gpu else (32, 32)
    rows = triton.cdiv(pairs, block_m)
    _up_kernel[(experts, rows, triton.cdiv(inter, block_n))](
        x, w13, order, offsets, act, x.stride(0), x.stride(1), w13.stride(0), w13.stride(1), w13.stride(2),
        width, inter, K=k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_H=block_k, DOT_F32=not on_gpu,
        PRECISION=precision)
    _down_kernel[(experts, rows, triton.cdiv(width, block_n))](
        act, w2, topk_weights, order, offsets, y, w2.stride(0), w2.stride(1), w2.stride(2), topk_weights.stride(0),
        topk_weights.stride(1), width, inter, K=k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_I=block_k,
        DOT_F32=not on_gpu, PRECISION=precision)
    return y


def fused_experts(x, topk_ids, topk_weights, w13, w2, out):
    """Writes sum_k topk_weights[t,k] * expert(topk_ids[t,k])(x[t]) into out[t] for every token; inputs read only."""
    tokens, width = x.shape
    if tokens == 0:
        return None
    k = topk_ids.shape[1]
    y = routed(x, topk_ids, topk_weights, w13, w2)
    block_n = 256 if x.is_cuda else 64
    _combine_kernel[(tokens, triton.cdiv(width, block_n))](y, out, out.stride(0), out.stride(1), width, K=k,
                                                           BLOCK_N=block_n)
    return None
