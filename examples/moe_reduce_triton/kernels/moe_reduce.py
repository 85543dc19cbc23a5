"""Tensor-parallel routed experts with their all-reduce (moe.fused_experts_reduce), on examples/moe_triton's kernels.

Each rank runs the grouped GEMM of examples/moe_triton on its own expert shards (a bundle is self-contained, so the
three Triton passes are repeated here); the last pass sums each token's K rows into an fp32 buffer, which is
all-reduced in fp32 across the group (a bf16 reduction would round every partial sum) and rounded once into out.
A faster kernel would overlap the reduction with the expert GEMMs: this slot hands it the group so that it can.
The hidden and intermediate sizes are constexprs: a model has one of each, and a loop over a runtime bound breaks
Triton 3.6's CPU interpreter under numpy 2.4 (the device image's pair).
"""

import torch
import torch.distributed as dist
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
def _sum_kernel(y_ptr, total_ptr, H, K: tl.constexpr, BLOCK_N: tl.constexpr):
    t = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = cols < H
    acc = tl.zeros([BLOCK_N], tl.float32)
    for k in range(K):
        acc += tl.load(y_ptr + (t * K + k) * H + cols, mask=c_ok, other=0.0)
    tl.store(total_ptr + t * H + cols, acc, mask=c_ok)


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


def fused_experts_reduce(x, topk_ids, topk_weights, w13, w2, out, group):
    """Writes the sum over the group's ranks of this rank's routed experts into out; inputs read only."""
    tokens, width = x.shape
    k = topk_ids.shape[1]
    total = torch.zeros((tokens, width), dtype=torch.float32, device=x.device)
    if tokens:
        y = routed(x, topk_ids, topk_weights, w13, w2)
        block_n = 256 if x.is_cuda else 64
        _sum_kernel[(tokens, triton.cdiv(width, block_n))](y, total, width, K=k, BLOCK_N=block_n)
    dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)  # every rank joins, even with no tokens
    out.copy_(total)
    return None
