"""Deviceless builds: each triton/cute op of a bundle is compiled to cubins in a jailed child, then every cubin
passes the ELF gate and must declare exactly the kernel and parameter layout the manifest promised."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from ..bundle import Bundle, Op
from ..errors import InfrastructureError, InputError
from ..native import elf
from ..native.declared import check_cubin, declared_types
from ..sandbox import JOIN_FAILED, GiB, SandboxPolicy
from ..verdict import Status
from .jail import WORK, run_jailed
from .record import BuildRecord, KernelArtifact

ARCHS = ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100")
TOOLCHAIN = {"triton": "triton", "cute": "nvidia-cutlass-dsl"}
CHILD = Path(__file__).with_name("child.py")
"""Run by path in isolated mode: the child imports only the compiler, never hotfloat (nor torch through it)."""
BUILD_POLICY = SandboxPolicy(cpu_seconds=300, address_space_bytes=16 * GiB, memory_bytes=4 * GiB)


def build_bundle(
    bundle: Bundle, *, arch: str = "sm_90a", timeout_s: float = 180.0, policy: SandboxPolicy = BUILD_POLICY
) -> BuildRecord:
    """Builds every AOT op of `bundle` for `arch`; candidate faults are a FAIL record, host faults raise."""
    if arch not in ARCHS:
        raise InputError(f"unknown target architecture {arch!r}; known: {', '.join(ARCHS)}")
    aot = [op for op in bundle.ops if op.entry.kind != "python"]
    toolchain = {TOOLCHAIN[k]: _version(TOOLCHAIN[k]) for k in sorted({op.entry.kind for op in aot})}
    base = {"bundle_identity": bundle.identity, "arch": arch, "toolchain": toolchain}
    if not aot:
        return BuildRecord(**base, status=Status.N_A, reasons=["no triton/cute ops: python ops load from source"])
    kernels, cubins, reasons = [], {}, []
    for op in aot:
        if not _targets(op, arch):
            reasons.append(f"{op.key}: not offered for {arch} (architectures {op.entry.architectures}); not built")
            continue
        try:
            built = _build_op(bundle, op, arch, toolchain, timeout_s, policy)
        except _Refused as e:
            return BuildRecord(**base, status=Status.FAIL, reasons=[f"{op.key}: {e}"])
        for artifact, data in built:
            kernels.append(artifact)
            cubins[artifact.cubin] = data
    if not kernels:
        return BuildRecord(**base, status=Status.N_A, reasons=reasons)
    return BuildRecord(**base, status=Status.PASS, reasons=reasons, kernels=kernels, cubins=cubins)


class _Refused(Exception):
    """The candidate's build failed or produced something other than what it declared."""


def _targets(op: Op, arch: str) -> bool:
    return arch in op.entry.architectures or (arch == "sm_90a" and "sm_90" in op.entry.architectures)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


def _build_op(bundle, op, arch, toolchain, timeout_s, policy) -> list[tuple[KernelArtifact, bytes]]:
    decl = op.entry.kernel
    request = {
        "kind": op.entry.kind,
        "source": op.entry.source,
        "entry": op.entry.entry,
        "arch": arch,
        "dtypes": list(op.dtypes),
        "kernel": decl.model_dump(),
    }
    with tempfile.TemporaryDirectory(prefix="hotfloat-build-") as tmp:
        work = Path(tmp)
        for rel, data in bundle.files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(data)
            os.utime(work / rel, (0, 0))  # debug line tables embed the source mtime; fixed, builds are reproducible
        (work / "out").mkdir()
        (work / "request.json").write_text(json.dumps(request))
        env = {
            "TRITON_CACHE_DIR": f"{WORK}/cache",
            "CUTE_DSL_ARCH": arch,
            "CUTE_DSL_KEEP": "cubin",
            "CUTE_DSL_DUMP_DIR": f"{WORK}/dump",
            "CUTE_DSL_CACHE_DIR": f"{WORK}/cache",
        }
        done = run_jailed(sys.executable, CHILD, workdir=work, env=env, timeout_s=timeout_s, policy=policy)
        if done.returncode is None:
            raise _Refused(f"build timed out after {timeout_s:g}s")
        if done.returncode == JOIN_FAILED:
            raise InfrastructureError("the build sandbox could not join its cgroup")
        if done.returncode != 0:
            raise _Refused(f"build failed (exit {done.returncode}): {_last_line(done.output_tail)}")
        results = _read_results(work / "out", op.dtypes)
        inputs = {
            "source": _sha(bundle.files[op.entry.source]),
            "manifest": _sha(bundle.files["manifest.toml"]),
            "declaration": _sha(json.dumps(request, sort_keys=True).encode()),
            "bundle": bundle.identity,
            "toolchain": _sha(json.dumps(toolchain, sort_keys=True).encode()),
        }
        return [
            _artifact(op, arch, dtype, results[dtype], _read_cubin(work / "out" / f"{dtype}.cubin"), inputs)
            for dtype in op.dtypes
        ]


def _artifact(op: Op, arch: str, dtype: str, result: dict, data: bytes, inputs: dict) -> tuple[KernelArtifact, bytes]:
    """Accepts a cubin only if it holds exactly the declared kernel with the declared layout (native.declared)."""
    decl, symbol = op.entry.kernel, result["symbol"]
    try:
        layout = check_cubin(op, dtype, symbol, data)
    except elf.CubinRefused as e:
        raise _Refused(f"{dtype}: {e}") from None
    if not 0 <= result["shared"] <= 227 << 10:
        raise _Refused(f"{dtype}: the kernel asks for {result['shared']} bytes of shared memory")
    digest = _sha(data)
    artifact = KernelArtifact(
        op=op.key,
        kind=op.entry.kind,
        entry=op.entry.entry,
        symbol=symbol,
        dtype=dtype,
        arch=arch,
        cubin=f"{op.entry.slot}.{op.entry.variant}.{dtype}.{arch}.cubin",
        cubin_sha256=digest,
        param_names=[p.name for p in decl.params],
        param_types=declared_types(op, dtype),
        layout=list(layout),
        grid=list(decl.grid),
        block=decl.block,
        shared_bytes=result["shared"],
        inputs=inputs,
    )
    return artifact, data


def _read_results(out: Path, dtypes: list[str]) -> dict:
    try:
        results = json.loads((out / "result.json").read_text())
    except (OSError, ValueError) as e:
        raise _Refused(f"the build wrote no readable result: {e}") from None
    for dtype in dtypes:
        r = results.get(dtype) if isinstance(results, dict) else None
        if not (
            isinstance(r, dict)
            and isinstance(r.get("symbol"), str)
            and isinstance(r.get("shared"), int)
            and (out / f"{dtype}.cubin").is_file()
        ):
            raise _Refused(f"the build result for {dtype} is missing or malformed")
    return results


def _read_cubin(path: Path) -> bytes:
    if path.stat().st_size > elf.MAX_CUBIN_BYTES:
        raise _Refused(f"{path.name}: {path.stat().st_size} bytes exceeds the {elf.MAX_CUBIN_BYTES}-byte cubin limit")
    return path.read_bytes()


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:400] if lines else "no output"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
