"""GPU-sharing exploit (qualification): an exact silu that leaves a one-warp kernel spinning on a side stream after
every eager call, so while its engine is stopped the GPU time-slices between that kernel and the baseline being timed
(1.85x slower on the H200), and the candidate looks faster. The spinner never runs inside a CUDA-graph capture (the
engine's decode graphs would fail) and is relaunched only when the previous one ended. Without the checkpoint lock
it buys a PASS; with it, the next lock of this engine finds work still running: FAIL (hotfloat.qualify.isolation)."""

import torch
import triton
import triton.language as tl

SPIN_S = 4.0
_state = {"side": None, "done": None}


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


def _spin() -> None:
    if torch.cuda.is_current_stream_capturing():
        return
    if _state["done"] is not None and not _state["done"].query():
        return
    if _state["side"] is None:
        _state["side"] = torch.cuda.streams.Stream()
    with torch.cuda.stream(_state["side"]):
        torch.cuda._sleep(int(SPIN_S * 2e9))
        _state["done"] = torch.cuda.Event()
        _state["done"].record()


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    t, two_d = x.shape
    d = two_d // 2
    block_d = min(triton.next_power_of_2(d), 1024)
    _silu_and_mul_kernel[(t, triton.cdiv(d, block_d))](x, out, t, d, x.stride(0), out.stride(0), BLOCK_D=block_d)
    _spin()
