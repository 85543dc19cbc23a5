"""SwiGLU gate out = silu(x[:, :D]) * x[:, D:] as one Triton pass: each element read once, written once, math in fp32.

On Hopper the kernel is launched with programmatic dependent launch (PDL): it may start while the previous kernel
in the stream or graph finishes, and waits (griddepcontrol.wait) before touching memory, so decode-sized calls pay
less than a full launch gap. Two tile orders, each used where the H200 measured it faster (docs/benchmarks.md,
version 3): below 16M output elements a 2-D grid (rows on axis 0; 0.73-0.83 us at 1-8 tokens, 1.95 us at 128 x 4096);
from 16M up a 1-D grid walking the tiles in memory order (4096-8192 x 8192 at the copy ceiling, level with FlashInfer).
The 1-D grid at decode sizes ran 0.07-0.15 us slower per call, in the run that had it everywhere."""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

ROW_MAJOR_ELEMENTS = 1 << 24
"""Calls with at least this many output elements use the 1-D memory-order grid."""


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, T, D, x_row_stride, out_row_stride, BLOCK_T: tl.constexpr,
                         BLOCK_D: tl.constexpr, PDL: tl.constexpr, ROW_MAJOR: tl.constexpr):
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    if ROW_MAJOR:
        col_tiles = tl.cdiv(D, BLOCK_D)
        row0 = (tl.program_id(0) // col_tiles) * BLOCK_T
        col0 = (tl.program_id(0) % col_tiles) * BLOCK_D
    else:
        row0 = tl.program_id(0) * BLOCK_T
        col0 = tl.program_id(1) * BLOCK_D
    rows = row0 + tl.arange(0, BLOCK_T)
    cols = col0 + tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < T) & (cols[None, :] < D)
    # int64 row offsets: at T x 2D beyond 2**31 elements a 32-bit product would wrap.
    x_row = x_ptr + rows[:, None].to(tl.int64) * x_row_stride
    gate = tl.load(x_row + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_row + D + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    out_row = out_ptr + rows[:, None].to(tl.int64) * out_row_stride
    tl.store(out_row + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def _config(t: int, d: int, on_gpu: bool) -> tuple[int, int, int, bool]:
    """(BLOCK_T, BLOCK_D, num_warps, row-major 1-D grid). The CPU interpreter pays per program, so it gets few large
    tiles; on the GPU decode calls get narrow tiles (more multiprocessors share few bytes) and large calls
    16-byte-per-thread rows in memory order."""
    if not on_gpu:
        block_d = min(triton.next_power_of_2(d), 4096)
        return max(1, min(triton.next_power_of_2(t), 16384 // block_d)), block_d, 4, False
    if t <= 16:
        return 1, min(triton.next_power_of_2(d), 512), 4, False
    if t <= 128:
        return 1, min(triton.next_power_of_2(d), 1024), 8, False
    block_d = min(triton.next_power_of_2(d), 4096)
    return 1, block_d, max(4, block_d // 256), t * d >= ROW_MAJOR_ELEMENTS


def launch(x: torch.Tensor, out: torch.Tensor, config: tuple[int, int, int, bool], pdl: bool) -> None:
    """One launch with an explicit config (tools/device/bench_sweep.py times several; silu_and_mul picks one)."""
    t, two_d = x.shape
    d = two_d // 2
    block_t, block_d, warps, row_major = config
    grid = (triton.cdiv(t, block_t), triton.cdiv(d, block_d))
    launch_kw = {"launch_pdl": True} if pdl else {}
    _silu_and_mul_kernel[(grid[0] * grid[1],) if row_major else grid](
        x, out, t, d, x.stride(0), out.stride(0), BLOCK_T=block_t, BLOCK_D=block_d, PDL=pdl, ROW_MAJOR=bool(row_major),
        num_warps=warps, **launch_kw)


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    """Writes silu(x[:, :D]) * x[:, D:] into out (T, D), honouring out's row stride; x is never written."""
    t, two_d = x.shape
    d = two_d // 2
    if x.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError("silu_and_mul needs unit stride along the hidden dim")
    if t == 0 or d == 0:
        return None
    pdl = x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9
    launch(x, out, _config(t, d, x.is_cuda), pdl)
    return None
