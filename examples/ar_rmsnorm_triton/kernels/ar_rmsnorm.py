"""residual_out = (sum over ranks of x) + residual and out = rmsnorm(residual_out) * weight: the all-reduce through
torch.distributed, then the residual add and the norm in one Triton pass.

x is read-only, so it is copied into residual_out (an output of this call, contiguous as the slot hands it over) and
reduced there in place on the validator's group, in the op dtype as the engine's own all-reduce does. The Triton pass
then reads each reduced row and its residual row once, keeps their sum in fp32 for the norm, writes the rounded sum
back into residual_out and the normalised row into out. Copy, collective and launch are all capturable, so the op is
graph-safe. The CPU interpreter pays per program, so there one program takes many rows."""

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["T"])  # one compile for every token count
def _add_norm(s_ptr, r_ptr, w_ptr, out_ptr, T, H, s_stride, r_stride, out_stride, eps,
              BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)
    cols = tl.arange(0, BLOCK_H)
    mask = (rows[:, None] < T) & (cols[None, :] < H)
    reduced = tl.load(s_ptr + rows[:, None] * s_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    residual = tl.load(r_ptr + rows[:, None] * r_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    s = reduced + residual
    tl.store(s_ptr + rows[:, None] * s_stride + cols[None, :], s.to(s_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=cols < H, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(s * s, axis=1) * (1.0 / H) + eps)
    y = s * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def ar_residual_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                        out: torch.Tensor, residual_out: torch.Tensor, group) -> None:
    """Writes out and residual_out (T, H); x, residual and weight are never written."""
    t, h = x.shape
    if any(a.stride(-1) != 1 for a in (x, residual, weight, out, residual_out)):
        raise ValueError("ar_residual_rmsnorm needs unit stride along the hidden dim")
    if t == 0:
        return None
    residual_out.copy_(x)
    dist.all_reduce(residual_out, op=dist.ReduceOp.SUM, group=group)
    block_h = triton.next_power_of_2(h)
    block_t = 1 if x.is_cuda else max(1, min(triton.next_power_of_2(t), 32768 // block_h))
    warps = max(1, min(16, block_h // 256)) if x.is_cuda else 4
    _add_norm[(triton.cdiv(t, block_t),)](
        residual_out, residual, weight, out, t, h, residual_out.stride(0), residual.stride(0), out.stride(0),
        float(eps), BLOCK_T=block_t, BLOCK_H=block_h, num_warps=warps)
    return None
