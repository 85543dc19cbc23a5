"""Preflight's broken control: the same kernel without the up projection, which verify must FAIL."""

import torch
import triton
import triton.language as tl


@triton.jit
def _gate(x_ptr, out_ptr, d, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    keep = cols < d
    a = tl.load(x_ptr + row * x_stride + cols, mask=keep, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * x_stride + d + cols, mask=keep, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_stride + cols, (a * tl.sigmoid(a) + 0.0 * b).to(out_ptr.dtype.element_ty), mask=keep)


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    """out[t, :] = silu(x[t, :d]) (wrong on purpose: the product is missing), one program per row and column block."""
    t, d = x.shape[0], x.shape[1] // 2
    if t == 0 or d == 0:
        return None
    block = min(triton.next_power_of_2(d), 1024)
    _gate[(t, triton.cdiv(d, block))](x, out, d, x.stride(0), out.stride(0), BLOCK=block)
    return None
