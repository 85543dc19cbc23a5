"""Memory exploit (qualification): an exact silu that keeps 8 GiB of buffers from its first call outside a graph
capture on, "merely" wasteful. Where its share has room for them it is judged on speed alone (FAIL, not shown
faster); where it has not, it is over its share at ready: FAIL (memory). Never NO_DECISION, never PASS."""

import torch
import triton
import triton.language as tl

HOARD = 8 << 30
_kept: list[torch.Tensor] = []


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, T, D, x_row_stride, out_row_stride, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < D
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    gate = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_row + D + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row.to(tl.int64) * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def _hoard() -> None:
    if _kept or torch.cuda.is_current_stream_capturing():
        return
    _kept.append(torch.empty(HOARD, dtype=torch.uint8, device="cuda"))


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    t, two_d = x.shape
    d = two_d // 2
    block_d = min(triton.next_power_of_2(d), 1024)
    _silu_and_mul_kernel[(t, triton.cdiv(d, block_d))](x, out, t, d, x.stride(0), out.stride(0), BLOCK_D=block_d)
    _hoard()
