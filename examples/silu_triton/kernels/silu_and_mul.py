"""SwiGLU gate out = silu(x[:, :D]) * x[:, D:] as one Triton pass: each element read once, written once, math in fp32.

On Hopper the kernel is launched with programmatic dependent launch (PDL): it may start while the previous kernel
in the stream or graph finishes, and waits (griddepcontrol.wait) before touching memory, so decode-sized calls pay
less than a full launch gap. The grid is 1-D over (row block, column block) tiles; a grid smaller than the tile count
makes the programs persistent (each loops over tiles). Tile shapes come from a sweep on the H200
(tools/device/bench_sweep.py, docs/benchmarks.md)."""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def _tile(x_ptr, out_ptr, T, D, x_row_stride, out_row_stride, row0, col0, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
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


@triton.jit(do_not_specialize=["T"])  # one compile for every token count
def _silu_and_mul_kernel(x_ptr, out_ptr, T, D, x_row_stride, out_row_stride, BLOCK_T: tl.constexpr,
                         BLOCK_D: tl.constexpr, PDL: tl.constexpr, PERSISTENT: tl.constexpr):
    if PDL:
        gdc_wait()
        gdc_launch_dependents()
    col_tiles = tl.cdiv(D, BLOCK_D)
    if PERSISTENT:
        for tile in tl.range(tl.program_id(0), tl.cdiv(T, BLOCK_T) * col_tiles, tl.num_programs(0)):
            _tile(x_ptr, out_ptr, T, D, x_row_stride, out_row_stride, (tile // col_tiles) * BLOCK_T,
                  (tile % col_tiles) * BLOCK_D, BLOCK_T, BLOCK_D)
    else:
        tile = tl.program_id(0)
        _tile(x_ptr, out_ptr, T, D, x_row_stride, out_row_stride, (tile // col_tiles) * BLOCK_T,
              (tile % col_tiles) * BLOCK_D, BLOCK_T, BLOCK_D)


def _config(t: int, d: int, on_gpu: bool) -> tuple[int, int, int, int]:
    """(BLOCK_T, BLOCK_D, num_warps, max programs; 0 = one program per tile). The CPU interpreter pays per program,
    so it gets few large tiles; on the GPU decode calls get narrow tiles (more multiprocessors share few bytes) and
    large calls 16-byte-per-thread rows."""
    if not on_gpu:
        block_d = min(triton.next_power_of_2(d), 4096)
        return max(1, min(triton.next_power_of_2(t), 16384 // block_d)), block_d, 4, 0
    if t <= 16:
        return 1, min(triton.next_power_of_2(d), 512), 4, 0
    if t <= 128:
        return 1, min(triton.next_power_of_2(d), 1024), 8, 0
    block_d = min(triton.next_power_of_2(d), 4096)
    return 1, block_d, max(4, block_d // 256), 0


def launch(x: torch.Tensor, out: torch.Tensor, config: tuple[int, int, int, int], pdl: bool) -> None:
    """One launch with an explicit config (the sweep times several; silu_and_mul picks one)."""
    t, two_d = x.shape
    d = two_d // 2
    block_t, block_d, warps, programs = config
    tiles = triton.cdiv(t, block_t) * triton.cdiv(d, block_d)
    grid = min(tiles, programs or tiles)
    launch_kw = {"launch_pdl": True} if pdl else {}
    _silu_and_mul_kernel[(grid,)](x, out, t, d, x.stride(0), out.stride(0), BLOCK_T=block_t, BLOCK_D=block_d, PDL=pdl,
                                  PERSISTENT=grid < tiles, num_warps=warps, **launch_kw)


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
