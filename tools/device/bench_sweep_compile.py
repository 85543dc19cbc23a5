"""The sweep's compile phase (tools/device/bench_sweep.py): every config compiled in a pool of spawned processes into
the shared Triton cache, launching nothing, so the timing phase only loads."""

import concurrent.futures as cf
import multiprocessing as mp
import os
import time

import torch
from bench_sweep_ops import call, load


class _Warmup:
    """Stands in for a Triton kernel in a compile worker: `kernel[grid](...)` compiles (into the shared cache) and
    launches nothing, so workers never put kernels on a GPU that another process is timing."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.kernel.warmup(*args, grid=grid, **kwargs)


KERNELS = {"silu": "_silu_and_mul_kernel", "rmsnorm": "_rmsnorm_kernel", "fused": "_fused_kernel"}


def compile_job(name, h, cfg, pdl):
    """Compiles one config in a worker process on empty (unlaunched) inputs, filling the shared Triton cache."""
    mod = load(name)
    setattr(mod, KERNELS[name], _Warmup(getattr(mod, KERNELS[name])))
    bf = torch.bfloat16
    s = {
        "x": torch.empty(3, 2 * h if name == "silu" else h, device="cuda", dtype=bf),
        "w": torch.empty(h, device="cuda", dtype=bf),
        "r": torch.empty(3, h, device="cuda", dtype=bf),
        "out": torch.empty(3, h, device="cuda", dtype=bf),
        "rout": torch.empty(3, h, device="cuda", dtype=bf),
    }
    call(mod, name, s, cfg, pdl)
    return name, h, cfg


def precompile(jobs):
    start = time.time()
    workers = int(os.environ.get("SWEEP_WORKERS", min(12, os.cpu_count() or 4)))
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(compile_job, *j) for j in jobs]
        failed = 0
        for f in cf.as_completed(futures):
            try:
                f.result()
            except Exception as e:  # reported; the timing phase then compiles (or fails) that config itself
                failed += 1
                print(f"precompile failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
    print(f"precompiled {len(jobs)} configs in {time.time() - start:.1f}s ({failed} failed)", flush=True)
