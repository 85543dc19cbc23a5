"""RMSNorm out = x * rsqrt(mean(x^2) + eps) * weight in one Triton pass: each row is read once and reduced in fp32.

On Hopper the kernel is launched with programmatic dependent launch (PDL): it may start while the previous kernel
finishes and waits (griddepcontrol.wait) before touching memory. A grid smaller than the row-block count makes the
programs persistent (each loops over row blocks, the weight loaded once). Configs come from a sweep on the H200
(tools/device/bench_sweep.py, docs/benchmarks.md)."""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def _rows(x_ptr, w, out_ptr, T, H, x_row_stride, out_row_stride, eps, row0, BLOCK_T: tl.constexpr,
          BLOCK_H: tl.constexpr):
    rows = row0 + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, BLOCK_H)
    mask = (rows[:, None] < T) & (cols[None, :] < H)
    x = tl.load(x_ptr + rows[:, None].to(tl.int64) * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    # rsqrt and a multiply by 1/H (computed before the row arrives): the reduction is followed by two instructions,
    # not a sqrt and two divides
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) * (1.0 / H) + eps)
    y = x * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None].to(tl.int64) * out_row_stride + cols[None, :],
             y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["T"])  # one compile for every token count
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, T, H, x_row_stride, out_row_stride, eps, BLOCK_T: tl.constexpr,
                    BLOCK_H: tl.constexpr, PDL: tl.constexpr, PERSISTENT: tl.constexpr):
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    cols = tl.arange(0, BLOCK_H)
    w = tl.load(w_ptr + cols, mask=cols < H, other=0.0).to(tl.float32)
    if PERSISTENT:
        for block in tl.range(tl.program_id(0), tl.cdiv(T, BLOCK_T), tl.num_programs(0)):
            _rows(x_ptr, w, out_ptr, T, H, x_row_stride, out_row_stride, eps, block * BLOCK_T, BLOCK_T, BLOCK_H)
    else:
        _rows(x_ptr, w, out_ptr, T, H, x_row_stride, out_row_stride, eps, tl.program_id(0) * BLOCK_T, BLOCK_T, BLOCK_H)


def _config(t: int, h: int, on_gpu: bool) -> tuple[int, int, int]:
    """(BLOCK_T, num_warps, max programs; 0 = one program per row block): a whole row per program so the reduction
    stays in registers; the CPU interpreter pays per program, so it packs many rows into one. Decode calls want more
    warps per row (latency), large calls fewer (more rows resident per multiprocessor)."""
    block_h = triton.next_power_of_2(h)
    if not on_gpu:
        return max(1, min(triton.next_power_of_2(t), 32768 // block_h)), 4, 0
    per_warp = 512 if t <= 128 else 1024
    return 1, max(1, min(16, block_h // per_warp)), 0


def launch(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float, config: tuple[int, int, int],
           pdl: bool) -> None:
    """One launch with an explicit config (the sweep times several; rmsnorm picks one)."""
    t, h = x.shape
    block_t, warps, programs = config
    blocks = triton.cdiv(t, block_t)
    grid = min(blocks, programs or blocks)
    launch_kw = {"launch_pdl": True} if pdl else {}
    _rmsnorm_kernel[(grid,)](x, weight, out, t, h, x.stride(0), out.stride(0), float(eps), BLOCK_T=block_t,
                             BLOCK_H=triton.next_power_of_2(h), PDL=pdl, PERSISTENT=grid < blocks, num_warps=warps,
                             **launch_kw)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float = 1e-6) -> None:
    """Writes rmsnorm(x) * weight into out (T, H), honouring out's row stride; x and weight are never written."""
    t, h = x.shape
    if x.stride(1) != 1 or out.stride(1) != 1 or weight.stride(0) != 1:
        raise ValueError("rmsnorm needs unit stride along the hidden dim")
    if t == 0:
        return None
    pdl = x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9
    launch(x, weight, out, eps, _config(t, h, x.is_cuda), pdl)
    return None
