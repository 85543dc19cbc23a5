"""residual_out = x + residual and out = rmsnorm(residual_out) * weight in one Triton pass.

Each row of x and residual is read once into registers, summed and reduced in fp32, and each output row written once:
4 x T x H elements cross DRAM, against the ~10 passes of the unfused torch path. The sum is normalised in fp32
before rounding (as sgl-kernel does), so out never sees residual_out's rounding. On Hopper the kernel is launched
with programmatic dependent launch: it waits (griddepcontrol.wait) for the previous kernel before touching memory,
so the launch overlaps the producer's tail, which is most of the cost of a decode-sized call. A grid smaller than the
row-block count makes the programs persistent (each loops over row blocks). Configs come from a sweep on the H200
(tools/device/bench_sweep.py, docs/benchmarks.md)."""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def _rows(x_ptr, r_ptr, w, out_ptr, rout_ptr, T, H, x_stride, r_stride, out_stride, rout_stride, eps, row0,
          BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    rows = (row0 + tl.arange(0, BLOCK_T)).to(tl.int64)
    cols = tl.arange(0, BLOCK_H)
    mask = (rows[:, None] < T) & (cols[None, :] < H)
    x = tl.load(x_ptr + rows[:, None] * x_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + rows[:, None] * r_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    s = x + r
    tl.store(rout_ptr + rows[:, None] * rout_stride + cols[None, :], s.to(rout_ptr.dtype.element_ty), mask=mask)
    # rsqrt and a multiply by 1/H (computed before the row arrives): the reduction is followed by two instructions,
    # not a sqrt and two divides
    inv_rms = tl.rsqrt(tl.sum(s * s, axis=1) * (1.0 / H) + eps)
    y = s * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["T"])  # one compile for every token count
def _fused_kernel(x_ptr, r_ptr, w_ptr, out_ptr, rout_ptr, T, H, x_stride, r_stride, out_stride, rout_stride, eps,
                  BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, PDL: tl.constexpr, PERSISTENT: tl.constexpr):
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    cols = tl.arange(0, BLOCK_H)
    w = tl.load(w_ptr + cols, mask=cols < H, other=0.0).to(tl.float32)
    if PERSISTENT:
        for block in tl.range(tl.program_id(0), tl.cdiv(T, BLOCK_T), tl.num_programs(0)):
            _rows(x_ptr, r_ptr, w, out_ptr, rout_ptr, T, H, x_stride, r_stride, out_stride, rout_stride, eps,
                  block * BLOCK_T, BLOCK_T, BLOCK_H)
    else:
        _rows(x_ptr, r_ptr, w, out_ptr, rout_ptr, T, H, x_stride, r_stride, out_stride, rout_stride, eps,
              tl.program_id(0) * BLOCK_T, BLOCK_T, BLOCK_H)


def _config(t: int, h: int, on_gpu: bool) -> tuple[int, int, int]:
    """(BLOCK_T, num_warps, max programs; 0 = one program per row block): a whole row per program so the reduction
    stays in registers. The CPU interpreter pays per program, so there it packs many rows into one. On the GPU,
    decode calls (few rows) spread a row over more warps to cut the latency of the dependent load -> reduce -> store
    chain; large calls use fewer warps per row so more rows stay resident per multiprocessor. Two rows (x and
    residual) live in registers, so a warp takes half the elements the plain rmsnorm example gives it."""
    block_h = triton.next_power_of_2(h)
    if not on_gpu:
        return max(1, min(triton.next_power_of_2(t), 32768 // block_h)), 4, 0
    per_warp = 256 if t <= 256 else 512
    return 1, max(1, min(16, block_h // per_warp)), 0


def launch(x, residual, weight, out, residual_out, eps: float, config: tuple[int, int, int], pdl: bool) -> None:
    """One launch with an explicit config (the sweep times several; fused_add_rmsnorm picks one)."""
    t, h = x.shape
    block_t, warps, programs = config
    blocks = triton.cdiv(t, block_t)
    grid = min(blocks, programs or blocks)
    launch_kw = {"launch_pdl": True} if pdl else {}
    _fused_kernel[(grid,)](
        x, residual, weight, out, residual_out, t, h, x.stride(0), residual.stride(0), out.stride(0),
        residual_out.stride(0), float(eps), BLOCK_T=block_t, BLOCK_H=triton.next_power_of_2(h), PDL=pdl,
        PERSISTENT=grid < blocks, num_warps=warps, **launch_kw)


def fused_add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, out: torch.Tensor,
                      residual_out: torch.Tensor, eps: float = 1e-6) -> None:
    """Writes out and residual_out (T, H), honouring their row strides; x, residual and weight are never written."""
    t, h = x.shape
    if any(a.stride(-1) != 1 for a in (x, residual, weight, out, residual_out)):
        raise ValueError("fused_add_rmsnorm needs unit stride along the hidden dim")
    if t == 0:
        return None
    pdl = x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9
    launch(x, residual, weight, out, residual_out, eps, _config(t, h, x.is_cuda), pdl)
    return None
