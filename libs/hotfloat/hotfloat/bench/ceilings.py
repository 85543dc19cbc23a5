"""The device's own limits, measured in the same run: copy bandwidth, GEMM rate and the empty-kernel launch floor."""

from __future__ import annotations

import platform
import subprocess

import torch
import triton
import triton.language as tl

from .records import Ceilings
from .timing import GRAPH_CALLS, CudaTimer, cold_cpu


def empty_kernel():
    """An empty Triton kernel, built on demand so it follows the interpreter setting in force at the call."""

    @triton.jit
    def _empty(ptr, FLAG: tl.constexpr):
        if FLAG:
            tl.store(ptr, 0)

    return _empty


def measure_cuda(timer: CudaTimer, budget_s: float) -> Ceilings:
    """1 GiB device copy (read + written bytes), an 8192^3 bf16 product on random data, and an empty kernel."""
    n, m = 1 << 30, 8192
    kernel, flag = empty_kernel(), torch.zeros(1, device="cuda")
    calls = [lambda: kernel[(1,)](flag, FLAG=False)]
    cold = timer.cold(calls, budget_s)[0]
    graph, _ = timer.capture(calls)
    floor = timer.replay(graph, GRAPH_CALLS, budget_s)
    return Ceilings(
        copy_Bps=2 * n / (_copy_us(timer, n, budget_s) * 1e-6),
        gemm_flops=2 * m**3 / (_gemm_us(timer, m, budget_s) * 1e-6),
        floor_graph_us=floor.median_us,
        floor_cold_us=cold.median_us,
    )


def _copy_us(timer: CudaTimer, n: int, budget_s: float) -> float:
    src = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return timer.cold([lambda: dst.copy_(src)], budget_s)[0].median_us


def _gemm_us(timer: CudaTimer, m: int, budget_s: float) -> float:
    a, b = (torch.randn(m, m, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty_like(a)
    return timer.cold([lambda: torch.mm(a, b, out=c)], budget_s)[0].median_us


def measure_cpu(budget_s: float) -> Ceilings:
    """The same three on the host, small enough for CI; they only give the CPU numbers a scale."""
    n = 1 << 24
    src = torch.randint(0, 255, (n,), dtype=torch.uint8)
    dst = torch.empty_like(src)
    copy = cold_cpu([lambda: dst.copy_(src)], budget_s)[0]
    m = 512
    a, b = torch.randn(m, m), torch.randn(m, m)
    c = torch.empty(m, m)
    gemm = cold_cpu([lambda: torch.mm(a, b, out=c)], budget_s)[0]
    kernel, flag = empty_kernel(), torch.zeros(1)
    cold = cold_cpu([lambda: kernel[(1,)](flag, FLAG=False)], budget_s)[0]
    return Ceilings(
        copy_Bps=2 * n / (copy.median_us * 1e-6),
        gemm_flops=2 * m**3 / (gemm.median_us * 1e-6),
        floor_graph_us=None,
        floor_cold_us=cold.median_us,
    )


def environment(device: str) -> dict[str, str]:
    """Identity of what produced the numbers: versions, and on CUDA the GPU, its driver and L2."""
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "host_cpu": platform.machine(),
    }
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env |= {
            "gpu": p.name,
            "sm": f"sm_{p.major}{p.minor}",
            "multiprocessors": str(p.multi_processor_count),
            "l2_bytes": str(l2_bytes()),
            "cuda": str(torch.version.cuda),
            "driver": _driver_version(),
        }
    return env


def l2_bytes() -> int:
    """The device's L2 size; 64 MiB (more than any current part has) when torch does not report it."""
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20))


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
