"""SwiGLU gate out = silu(x[:, :D]) * x[:, D:] as a CuTe DSL kernel: one thread per output element, math in fp32.

`silu_and_mul` is the @cute.jit launcher the validator compiles (deviceless, to a cubin); the Driver API then
launches `silu_and_mul_kernel` over grid (cdiv(D, 256), T) with 256 threads, exactly as the launcher does."""

import cutlass
import cutlass.cute as cute

THREADS = 256


@cute.kernel
def silu_and_mul_kernel(x: cute.Pointer, out: cute.Pointer, D: cutlass.Int32, x_stride0: cutlass.Int32,
                        out_stride0: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, row, _ = cute.arch.block_idx()
    col = bidx * THREADS + tidx
    if col < D:
        base = cutlass.Int64(row) * cutlass.Int64(x_stride0)
        gate = (x + base + col).load().to(cutlass.Float32)
        up = (x + base + D + col).load().to(cutlass.Float32)
        y = gate / (1.0 + cute.math.exp(-gate)) * up
        (out + cutlass.Int64(row) * cutlass.Int64(out_stride0) + col).store(y.to(out.dtype))


@cute.jit
def silu_and_mul(x: cute.Pointer, out: cute.Pointer, D: cutlass.Int32, x_stride0: cutlass.Int32,
                 out_stride0: cutlass.Int32):
    """Host-side launch, mirrored by the manifest's grid and block; T is not a parameter, it is the grid's y."""
    silu_and_mul_kernel(x, out, D, x_stride0, out_stride0).launch(grid=[(D + THREADS - 1) // THREADS, 1, 1],
                                                                   block=[THREADS, 1, 1])
