"""Runs a bench in a sandboxed child and returns its report: the parent never imports the miner's kernels.

The child (`hotfloat.bench.child`) starts through `hotfloat.sandbox.run_child` like every process that runs
candidate code: its own namespaces, seccomp filter and bounds, the bundle read-only at /bundle, `hotfloat`
read-only at /hotfloat-lib, an allowlisted environment, and the stock libraries' runtime (the SGLang device payload)
exactly as qualification engines see it (`hotfloat.qualify.host.runtime_view`): read-only, with the validator's JIT
caches copied from /warm-cache into the child's private /tmp/cache before any of the bundle's code is imported.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from collections import deque
from pathlib import Path

from .. import errors
from ..bundle import Bundle, load_bundle, unpack
from ..qualify.host import CACHE, WARM_CACHE, runtime_view
from ..sandbox import Bind, GiB, SandboxPolicy, child_env, hotfloat_binds, run_child
from .harness import PROGRESS, Options, Progress
from .records import ChildResult, Report

BUNDLE = "/bundle"
STARTUP_S = 300.0
"""Interpreter, torch, triton and the harness, plus copying the warm caches: slow on a cold host, never candidate
code."""
TIMEOUT_S = 3600.0
"""The whole run after start-up: `--shapes all` on a GPU with FlashInfer's first JIT builds takes minutes."""
PACKAGE_PARENT = Path(__file__).resolve().parents[2]


def bench_policy(device: str, timeout_s: float) -> SandboxPolicy:
    """The child's bounds: the GPU policy on cuda (no RLIMIT_AS, which the CUDA driver's reservations exceed), room in
    /tmp for the copied caches and JIT builds, and processes for ninja and nvcc on top of torch's thread pools."""
    cuda = device == "cuda"
    return SandboxPolicy(
        gpu=cuda,
        address_space_bytes=None if cuda else 16 * GiB,
        memory_bytes=(64 if cuda else 8) * GiB,
        cpu_seconds=max(600, int(2 * (STARTUP_S + timeout_s))),
        max_processes=1024,
        tmp_bytes=(8 if cuda else 1) * GiB,
    )


def run_bench(
    path: str | Bundle,
    options: Options,
    progress: Progress | None = None,
    *,
    sandboxed: bool = True,
    timeout_s: float = TIMEOUT_S,
    startup_s: float = STARTUP_S,
) -> Report:
    """Checks the bundle here (bad input fails fast, without a child), stages its files, runs the child and returns
    its report with the bounds it ran under. The child's errors come back as their own class; a child that does not
    answer in time or answers garbage is an InfrastructureError."""
    bundle = path if isinstance(path, Bundle) else _open(path)
    with tempfile.TemporaryDirectory(prefix="hotfloat-bench-") as tmp:
        staged = Path(tmp) / "bundle"
        for rel, data in bundle.files.items():
            (staged / rel).parent.mkdir(parents=True, exist_ok=True)
            (staged / rel).write_bytes(data)
        os.chmod(tmp, 0o755)  # a root validator's child runs as a fresh uid (uid-drop) and must read the bundle
        binds, env, warm = _view(options.device, staged, sandboxed)
        request = {
            **dataclasses.asdict(options),
            "shapes": [dict(s) for s in options.shapes],
            "path": BUNDLE if sandboxed else str(staged),
            "warm_cache": warm,
        }
        tail: deque[str] = deque(maxlen=20)
        done = run_child(
            [sys.executable, "-s", "-B", "-m", "hotfloat.bench.child"],
            ChildResult,
            request=request,
            policy=bench_policy(options.device, timeout_s),
            sandboxed=sandboxed,
            binds=binds,
            env=env,
            startup_s=startup_s,
            timeout_s=timeout_s,
            on_line=_lines(progress, tail),
        )
    if done.result is None:
        raise errors.InfrastructureError(f"the bench child failed: {done.detail}: " + " | ".join(list(tail)[-5:]))
    if done.result.error is not None:
        cls = vars(errors).get(done.result.error.kind)
        if not (isinstance(cls, type) and issubclass(cls, errors.HotfloatError)):
            cls = errors.HotfloatError
        raise cls(done.result.error.message)
    return done.result.report.model_copy(update={"sandboxed": sandboxed, "bounds": sorted(done.bounds)})


def _open(path: str) -> Bundle:
    p = Path(path)
    if p.is_dir():
        return load_bundle(p)
    if p.is_file():
        return unpack(p.read_bytes())
    raise errors.InputError(f"{path}: no such bundle directory or archive")


def _view(device: str, staged: Path, sandboxed: bool) -> tuple[list[Bind], dict[str, str], dict | None]:
    """Binds, environment and the warm caches' copy for the child. Sandboxed: the package, the bundle and the engine
    runtime read-only, JIT caches in the private /tmp. Unsandboxed: the caller's environment and caches, as they are."""
    interpret = {"TRITON_INTERPRET": "1"} if device == "cpu" else {}
    if not sandboxed:
        pythonpath = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))
        return [], {**os.environ, **interpret, "PYTHONPATH": pythonpath}, None
    package, _ = hotfloat_binds()
    runtime, extra = runtime_view("sglang")
    binds = list({b.inside: b for b in [*package, *runtime, Bind(staged, BUNDLE)]}.values())
    warm = any(b.inside == WARM_CACHE for b in binds)
    extra.update(
        interpret, TRITON_CACHE_DIR=f"{CACHE}/triton", TORCHINDUCTOR_CACHE_DIR=f"{CACHE}/inductor", XDG_CACHE_HOME=CACHE
    )
    return binds, child_env(extra, home="/tmp"), {"from": WARM_CACHE, "to": CACHE} if warm else None


def _lines(progress: Progress | None, tail: deque[str]):
    """The child's output: progress lines to the callback, everything else kept for the error message."""

    def on_line(line: str) -> None:
        parts = line.split(" ", 3)
        if parts[0] != PROGRESS:
            tail.append(line)
        elif progress and len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
            progress(int(parts[1]), int(parts[2]), parts[3])

    return on_line
