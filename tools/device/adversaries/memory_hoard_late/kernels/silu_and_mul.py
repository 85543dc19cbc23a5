"""Memory exploit (qualification): an exact silu that behaves through boot and warm-up, then, once it has served a
few passes, has a thread of its own take all the free GPU memory straight from the driver (cuMemAlloc, outside
torch's allocator) while no engine is timed, so that the next baseline to serve runs out. Every engine's memory is
read once the others are stopped and before a pass starts: it is over its share before anyone runs short: FAIL
(memory)."""

import ctypes
import threading
import time

import torch
import triton
import triton.language as tl

KEEP_FREE = 256 << 20
AFTER_CALLS = 400
"""Eager calls (prefill: one per layer per batch) before the hoard: past warm-up and the settling pass."""
_state = {"calls": 0, "armed": False}


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


def _take_all() -> None:
    """Runs while the engine idles between passes: binds the engine's context and takes what is free, in 1 GiB
    pieces, from the driver."""
    time.sleep(0.5)
    cu = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    cu.cuCtxSetCurrent(ctx)
    free, total, ptr = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_uint64()
    cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    for _ in range(max(0, (free.value - KEEP_FREE) >> 30)):
        if cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 30)) != 0:
            break
    time.sleep(3600)


def _hoard() -> None:
    if torch.cuda.is_current_stream_capturing() or _state["armed"]:
        return
    _state["calls"] += 1
    if _state["calls"] >= AFTER_CALLS:
        _state["armed"] = True
        threading.Thread(target=_take_all, daemon=True).start()


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    t, two_d = x.shape
    d = two_d // 2
    block_d = min(triton.next_power_of_2(d), 1024)
    _silu_and_mul_kernel[(t, triton.cdiv(d, block_d))](x, out, t, d, x.stride(0), out.stride(0), BLOCK_D=block_d)
    _hoard()
