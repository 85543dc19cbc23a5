"""SwiGLU gate out = silu(x[:, :D]) * x[:, D:] as an ahead-of-time Triton kernel: one program per (row, column block).

The validator compiles it to a cubin without a GPU and launches it over grid (T, cdiv(D, BLOCK_D)); rows may be
padded (any row stride) but the hidden dim must be contiguous."""

import triton
import triton.language as tl


@triton.jit
def silu_and_mul_kernel(x, out, D, x_stride0, out_stride0, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < D
    gate = tl.load(x + row * x_stride0 + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x + row * x_stride0 + D + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out + row * out_stride0 + cols, y.to(out.dtype.element_ty), mask=mask)
