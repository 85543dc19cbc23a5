#!/usr/bin/env python3
"""Builds FlashInfer's JIT attention modules for sm_90a here, ahead of time, so a device call loads them (`make
device-flashinfer`).

On the H100/H200 FlashInfer JIT-compiles each attention module with nvcc on first use (150 s and more per prefill
module), which a short device call cannot afford. FlashInfer 0.6.12 loads `<package>/data/aot/<uri>/<uri>.so`
without ninja or nvcc when that file exists (`JitSpec.build_and_load`, `is_aot`), so this script compiles the modules
SGLang's flashinfer backend and the bench's `stock_prefill.flashinfer_prefill` use, with FlashInfer's own generators
and this machine's nvcc, packs them as `aot/<uri>/<uri>.so` in one xz tar split into <= 60 MiB chunks with SHA256SUMS
and MANIFEST.txt in `.device-carry/flashinfer/`, and `tools/device/helpers/flashinfer_prebuilt.sh` unpacks them into
the payload's FlashInfer on the device. The FlashInfer is the staged payload's (`make device-engine`); torch comes
from `.venv-engine`, so run it with `.venv-engine/bin/python`. The modules hold no Python symbols (tvm-ffi), so the
device's Python 3.12 loads what Python 3.11 built here.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import device_payload  # this folder's SGLang payload builder: its chunked, checksummed packing

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / ".cache/device-engine/stage/site"
"""The payload's site-packages as `make device-engine` staged it: the exact FlashInfer the device runs."""
WORK = ROOT / ".cache/flashinfer-aot"
"""FlashInfer's workspace (ninja files, objects, generated sources) and the staged tree; ignored, never carried."""
OUT = ROOT / ".device-carry/flashinfer"
ARCH = "9.0"
"""FlashInfer's arch list for H100/H200; it normalises 9.0 to sm_90a, which FA3 needs."""
SHIM_MODULES = ("flashinfer", "pynvml")
"""Taken from the staged site; the rest of it (cp312 tvm_ffi, ...) would shadow .venv-engine's cp311 builds."""


@dataclass(frozen=True)
class Module:
    """One FlashInfer module to build: the generator FlashInfer's wrappers call at plan() and its arguments."""

    why: str
    """Which caller plans it (SGLang's backend, the bench adapter)."""
    backend: str
    """`fa2` or `fa3` for a batch prefill module, `cascade` for merge_state, `norm` for the RMSNorms."""
    head_dim: int = 0


MODULES = (
    Module("SGLang ragged prefill (auto -> fa3 on sm_90); bench ragged prefill at 32q/8kv", "fa3", 128),
    Module("SGLang paged prefill and tensor-core decode (GQA 4 -> fa2); bench paged prefill at 32q/8kv", "fa2", 128),
    Module("bench ragged prefill at 14q/2kv (auto -> fa3)", "fa3", 64),
    Module("bench paged prefill at 14q/2kv (fa2)", "fa2", 64),
    Module("merge_state (SGLang's extend with a prefix; the bench's merge)", "cascade"),
    Module(
        "SGLang's RMSNorm and fused add-RMSNorm (every engine built it at boot: 17-30% of a boot's stack samples)",
        "norm",
    ),
)
"""bf16 q/kv/o, int32 indptrs, no RoPE in the kernel, no sliding window, no logit cap, no fp16 QK reduction: the
arguments `BatchPrefillWith{Ragged,Paged}KVCacheWrapper.plan` and `BatchDecodeWithPagedKVCacheWrapper.plan` pass
for SGLang's llama-8b calls and the bench's (head counts do not enter a module's name, only the head dim)."""


class AotError(Exception):
    """A build step failed; main() prints it as one line and exits 1."""


def cuda_home() -> Path:
    """CUDA_HOME, else the CUDA 13.0 toolkit: FlashInfer runs `$CUDA_HOME/bin/nvcc`, so a wrapper on PATH is no use."""
    for c in (os.environ.get("CUDA_HOME"), "/usr/local/cuda-13.0", "/usr/local/cuda"):
        if c and (Path(c) / "bin/nvcc").exists():
            return Path(c)
    raise AotError("no CUDA toolkit with bin/nvcc: set CUDA_HOME")


def libcuda_stub(cuda: Path) -> Path:
    """A libcuda.so to link against: this machine has no driver and the toolkit ships no stubs/. It exports every
    cu* name in cuda.h under the soname libcuda.so.1, so a module that calls the driver (TMA descriptors) records
    libcuda.so.1 and binds to the real driver on the device."""
    stub = WORK / "stub"
    lib = stub / "libcuda.so"
    if lib.exists():
        return stub
    stub.mkdir(parents=True, exist_ok=True)
    names = sorted(set(re.findall(r"\bcu[A-Z]\w*\b", (cuda / "include/cuda.h").read_text())))
    (stub / "libcuda_stub.c").write_text("".join(f"void {n}(void) {{}}\n" for n in names))
    cmd = ["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(lib), str(stub / "libcuda_stub.c")]
    if subprocess.run(cmd).returncode:
        raise AotError("could not build the libcuda stub")
    return stub


def extra_includes(cuda: Path) -> Path:
    """Headers the toolkit here lacks (curand_kernel.h, which CUTLASS's utilities include for FA3), linked from the
    pip nvidia-* packages of .venv-engine, as sglang_env.sh does on the device; only the missing ones, so the
    toolkit's own headers are never shadowed."""
    import importlib.util

    inc = WORK / "include"
    shutil.rmtree(inc, ignore_errors=True)
    inc.mkdir(parents=True)
    spec = importlib.util.find_spec("nvidia")
    for base in spec.submodule_search_locations if spec else []:
        for entry in sorted(Path(base).glob("*/include/*")):
            if not (cuda / "include" / entry.name).exists() and not (inc / entry.name).exists():
                (inc / entry.name).symlink_to(entry)
    return inc


def prepare_env(jobs: int) -> None:
    """FlashInfer reads these at import: they must be set before the first `import flashinfer`."""
    if not (SITE / "flashinfer").is_dir():
        raise AotError(f"no {SITE.relative_to(ROOT)}/flashinfer: run `make device-engine` first")
    if shutil.which("ninja") is None:
        raise AotError("ninja is not on PATH")
    cuda = cuda_home()
    shim = WORK / "shim"
    shim.mkdir(parents=True, exist_ok=True)
    for name in SHIM_MODULES:
        src = next(p for p in (SITE / name, SITE / f"{name}.py") if p.exists())
        link = shim / src.name
        if not link.is_symlink():
            link.symlink_to(src)
    sys.path.insert(0, str(shim))
    os.environ.update(
        CUDA_HOME=str(cuda),
        FLASHINFER_CUDA_ARCH_LIST=ARCH,
        FLASHINFER_WORKSPACE_BASE=str(WORK),
        FLASHINFER_EXTRA_CUDAFLAGS=f"-I{extra_includes(cuda)}",
        FLASHINFER_EXTRA_LDFLAGS=f"-L{libcuda_stub(cuda)}",
        MAX_JOBS=str(jobs),
    )
    for var in (
        "FLASHINFER_EXTRA_CFLAGS",
        "FLASHINFER_JIT_DEBUG",
        "FLASHINFER_JIT_VERBOSE",
    ):
        os.environ.pop(var, None)


def spec_for(m: Module):
    """The JitSpec FlashInfer's own plan() would build for this module."""
    import torch
    from flashinfer.jit.attention import gen_batch_prefill_module
    from flashinfer.jit.cascade import gen_cascade_module
    from flashinfer.jit.norm import gen_norm_module

    if m.backend in ("cascade", "norm"):
        return gen_cascade_module() if m.backend == "cascade" else gen_norm_module()
    bf16 = torch.bfloat16
    return gen_batch_prefill_module(
        m.backend, bf16, bf16, bf16, torch.int32, m.head_dim, m.head_dim, 0, False, False, False
    )


def check_module(so: Path) -> None:
    """A module the device cannot load regardless of Python version is refused here."""
    dyn = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True).stdout
    py = sorted({w for w in dyn.split() if w.startswith(("Py", "_Py"))})
    if py:
        raise AotError(f"{so.name} references Python symbols ({py[:3]}): it would be tied to this Python")


def build(verbose: bool) -> list[tuple[Module, str, Path, float]]:
    built = []
    for m in MODULES:
        spec = spec_for(m)
        start = time.monotonic()
        print(f"building {spec.name} ({m.why})", file=sys.stderr, flush=True)
        try:
            spec.build(verbose=verbose)
        except RuntimeError as e:
            raise AotError(f"{spec.name}: {str(e).splitlines()[-1][:300]}") from e
        seconds = time.monotonic() - start
        check_module(spec.jit_library_path)
        print(f"  {seconds:.0f} s, {spec.jit_library_path.stat().st_size / 2**20:.1f} MiB", file=sys.stderr)
        built.append((m, spec.name, spec.jit_library_path, seconds))
    return built


def pack(built: list[tuple[Module, str, Path, float]]) -> None:
    """A reproducible xz tar of aot/<uri>/<uri>.so, chunked, with SHA256SUMS and MANIFEST.txt, packed as the SGLang
    payload is (`device_payload.pack`: swapped in at the end, so a failed build leaves the previous carry whole)."""
    import flashinfer
    import torch

    stage = WORK / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    for _, name, so, _ in built:
        (stage / "aot" / name).mkdir(parents=True)
        shutil.copy2(so, stage / "aot" / name / so.name)
    (stage / "aot/.flashinfer-version").write_text(flashinfer.__version__ + "\n")
    nvcc = subprocess.run([os.environ["CUDA_HOME"] + "/bin/nvcc", "--version"], capture_output=True, text=True).stdout
    release = re.findall(r"release (\S+),", nvcc)[0]
    rows = [
        f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, nvcc {release},"
        f" arch sm_90a (FLASHINFER_CUDA_ARCH_LIST={ARCH})"
    ]

    def manifest(out: Path) -> None:
        packed = sum(c.stat().st_size for c in out.glob("flashinfer-aot.tar.xz.*"))
        raw = sum(so.stat().st_size for *_, so, _ in built)
        rows.append(f"{len(built)} modules, {raw / 2**20:.1f} MiB raw, {packed / 2**20:.1f} MiB xz")
        rows.extend(f"{so.stat().st_size:>10}  {name}  # {m.why}" for m, name, so, _ in built)
        (out / "MANIFEST.txt").write_text("\n".join(rows) + "\n")

    device_payload.pack(stage, OUT, stem="flashinfer-aot", level="-9e", finish=manifest)
    print("\n".join(rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel nvcc jobs (MAX_JOBS)")
    parser.add_argument("--verbose", action="store_true", help="show ninja's commands")
    args = parser.parse_args()
    try:
        prepare_env(args.jobs)
        pack(build(args.verbose))
    except (AotError, device_payload.PayloadError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
