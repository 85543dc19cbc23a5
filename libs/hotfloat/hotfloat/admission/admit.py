"""Admission of built cubins: everything that can be checked without a GPU runs first (record against the bundle,
digests, then the cubin-against-declaration check the compiler ran too); then, on a CUDA machine, the worker loads, launches
and verifies each cubin. On a machine without a GPU the verdict says so explicitly instead of passing."""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
import tempfile
from pathlib import Path

from ..bundle import Bundle
from ..compiler.record import BuildRecord, KernelArtifact
from ..errors import InfrastructureError, InputError
from ..native import elf
from ..native.declared import check_cubin, declared_types
from ..sandbox import Bind, SandboxPolicy, child_env, hotfloat_binds, run_child
from ..sandbox.child import LIB
from ..verdict import Status
from .records import AdmissionReport, KernelAdmission, WorkerReport

CUBINS = "/cubins"
STARTUP_S = 120.0
"""Interpreter, torch and CUDA context start-up, before any cubin is loaded."""


def admit(bundle: Bundle, record: BuildRecord, *, seed: int | None = None, timeout_s: float = 300.0) -> AdmissionReport:
    """Admits the cubins `record` built from `bundle`; a record that does not belong to the bundle is refused."""
    if record.bundle_identity != bundle.identity:
        raise InputError("the build record is for another bundle (identity mismatch)")
    seed = secrets.randbits(62) if seed is None else seed
    base = {"bundle_identity": bundle.identity, "seed": seed}
    if record.status is not Status.PASS:
        status = Status.N_A if record.status is Status.N_A else record.status
        return AdmissionReport(
            **base,
            status=status,
            device="none",
            reasons=["nothing admitted: build " + record.status.value, *record.reasons],
        )
    failures = [
        f"{k.cubin}: {why}" for k in record.kernels if (why := static_check(bundle, k, record.cubins.get(k.cubin)))
    ]
    if failures:
        return AdmissionReport(**base, status=Status.FAIL, device="none", reasons=failures)
    missing = gpu_missing()
    if missing:
        return AdmissionReport(
            **base,
            status=Status.NO_DECISION,
            device="cpu",
            reasons=[
                f"skipped: no GPU ({missing}); ELF gate and declared kernel layouts passed for {len(record.kernels)} cubins, "
                "the Driver-API load, launch and verification need a CUDA device"
            ],
        )
    report = _run_worker(record, seed, timeout_s)
    bad = [f"{k.cubin}: {k.reason}" for k in report.results if not k.ok]
    return AdmissionReport(
        **base,
        status=Status.FAIL if bad else Status.PASS,
        device=f"cuda:{report.device}",
        reasons=bad or [f"{len(report.results)} cubins loaded as declared and verified"],
        kernels=report.results,
    )


def static_check(bundle: Bundle, art: KernelArtifact, data: bytes | None) -> str | None:
    """Why this artifact may not be loaded, or None: it must match the manifest's declaration and its own bytes."""
    op = next((o for o in bundle.ops if o.key == art.op), None)
    if op is None or op.entry.kernel is None or op.entry.kind != art.kind or op.entry.entry != art.entry:
        raise InputError(f"{art.cubin}: the build record names an op the bundle does not declare")
    decl = op.entry.kernel
    types = declared_types(op, art.dtype)
    if ([p.name for p in decl.params], types, list(decl.grid), decl.block) != (
        art.param_names,
        art.param_types,
        art.grid,
        art.block,
    ):
        raise InputError(f"{art.cubin}: the build record's parameters or launch shape differ from the manifest")
    if data is None or hashlib.sha256(data).hexdigest() != art.cubin_sha256:
        raise InputError(f"{art.cubin}: cubin bytes missing or not matching the recorded digest")
    try:
        declared = check_cubin(op, art.dtype, art.symbol, data)
    except elf.CubinRefused as e:
        return str(e)
    if [tuple(p) for p in art.layout] != list(declared):
        return f"the recorded parameter layout {art.layout} differs from the declared {list(declared)}"
    return None


def gpu_missing() -> str | None:
    """Why no CUDA device can be used here, or None when one can."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return "cuda-bindings is not installed"
    try:
        err = driver.cuInit(0)[0]
        if err != driver.CUresult.CUDA_SUCCESS:
            return f"cuInit failed: {err.name}"
        err, count = driver.cuDeviceGetCount()
    except Exception as e:  # the bindings raise their own loader errors when libcuda is absent
        return f"CUDA driver unavailable: {type(e).__name__}"
    return None if err == driver.CUresult.CUDA_SUCCESS and count > 0 else "no CUDA device"


def _run_worker(record: BuildRecord, seed: int, timeout_s: float) -> WorkerReport:
    """Runs the worker in the GPU sandbox (the cubins are the candidate's code): a hang is the kernel's fault (FAIL);
    a worker that cannot start, dies or answers garbage is the host's (raises)."""
    with tempfile.TemporaryDirectory(prefix="hotfloat-admit-") as tmp:
        os.chmod(tmp, 0o755)
        arts = []
        for k in record.kernels:
            (Path(tmp) / k.cubin).write_bytes(record.cubins[k.cubin])
            arts.append({**k.model_dump(mode="json"), "slot": k.op.split(":")[0], "path": f"{CUBINS}/{k.cubin}"})
        binds, pythonpath = hotfloat_binds()
        policy = SandboxPolicy(gpu=True, address_space_bytes=None, cpu_seconds=max(60, int(timeout_s) * 2))
        done = run_child(
            [sys.executable, "-s", "-B", f"{LIB}/hotfloat/native/worker.py"],
            WorkerReport,
            request={"artifacts": arts, "seed": seed},
            policy=policy,
            sandboxed=True,
            binds=[*binds, Bind(Path(tmp), CUBINS)],
            env=child_env({"PYTHONPATH": pythonpath}, home="/tmp"),
            startup_s=STARTUP_S,
            timeout_s=timeout_s,
        )
    if done.kind == "timeout":
        why = f"killed: the worker did not finish within {timeout_s:g}s (a kernel hung)"
        return WorkerReport(
            device="unknown",
            elapsed_s=timeout_s,
            results=[KernelAdmission(cubin=k.cubin, ok=False, reason=why) for k in record.kernels],
        )
    if done.result is None:
        raise InfrastructureError(f"admission worker failed: {done.detail}: {done.output_tail[-300:]}")
    return done.result
