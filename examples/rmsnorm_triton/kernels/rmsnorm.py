"""RMSNorm out = x * rsqrt(mean(x^2) + eps) * weight in one Triton pass: each row is read once and reduced in fp32.

On Hopper the kernel is launched with programmatic dependent launch (PDL): it may start while the previous kernel
finishes and waits (griddepcontrol.wait) before touching memory. Warp counts come from a sweep on the H200
(docs/benchmarks.md)."""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, T, H, x_row_stride, out_row_stride, eps,
                    BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, PDL: tl.constexpr):
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, BLOCK_H)
    col_ok = cols < H
    mask = (rows[:, None] < T) & col_ok[None, :]
    x = tl.load(x_ptr + rows[:, None].to(tl.int64) * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / H + eps)
    y = x * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None].to(tl.int64) * out_row_stride + cols[None, :],
             y.to(out_ptr.dtype.element_ty), mask=mask)


def _config(t: int, h: int, on_gpu: bool) -> tuple[int, int, int]:
    """(BLOCK_T, BLOCK_H, num_warps): a whole row per program so the reduction stays in registers; the CPU
    interpreter pays per program, so it packs many rows into one. Decode calls want more warps per row (latency),
    large calls fewer (more rows resident per multiprocessor)."""
    block_h = triton.next_power_of_2(h)
    if not on_gpu:
        return max(1, min(triton.next_power_of_2(t), 32768 // block_h)), block_h, 4
    per_warp = 512 if t <= 128 else 1024
    return 1, block_h, max(1, min(16, block_h // per_warp))


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float = 1e-6) -> None:
    """Writes rmsnorm(x) * weight into out (T, H), honouring out's row stride; x and weight are never written."""
    t, h = x.shape
    if x.stride(1) != 1 or out.stride(1) != 1 or weight.stride(0) != 1:
        raise ValueError("rmsnorm needs unit stride along the hidden dim")
    if t == 0:
        return None
    block_t, block_h, warps = _config(t, h, x.is_cuda)
    launch = {"launch_pdl": True} if x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9 else {}
    _rmsnorm_kernel[(triton.cdiv(t, block_t),)](x, weight, out, t, h, x.stride(0), out.stride(0), float(eps),
                                                BLOCK_T=block_t, BLOCK_H=block_h, PDL=bool(launch), num_warps=warps,
                                                **launch)
    return None
