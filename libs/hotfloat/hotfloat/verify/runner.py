"""verify_bundle: runs each op in its own sandboxed child and turns every observation into verdict rows.

Gates run in the validator's order: the bundle contract (already held by a loaded Bundle), scan's policy, then
running. The parent never imports candidate code: it draws inputs, computes the fp32 reference, sends bytes, and
judges the bytes that come back. A fault the candidate can cause (hang, crash, garbage) fails its op; a fault before
any candidate code ran (the sandbox or interpreter would not start) raises InfrastructureError.

Each op's child is launched one op ahead, the first before this process imports torch: a child spends most of its
start-up importing torch, and so does the parent, so on two cores the two imports overlap instead of adding up.
"""

from __future__ import annotations

import random
import secrets
import subprocess
import sys
import time

from ..bundle import Bundle
from ..errors import InfrastructureError, no_gpu
from ..slots import get_slot
from .gates import OnRow, not_applicable, scan_rows
from .launcher import ChildSession
from .records import VerifyOptions, VerifyReport, VerifyRow


def verify_bundle(bundle: Bundle, options: VerifyOptions, on_row: OnRow | None = None) -> VerifyReport:
    """Verifies every op of `bundle` that applies to the device; the report carries the seed for replay.

    `on_row` is called once per row of the report, as soon as that row is final (progress for a CLI)."""
    started = time.monotonic()
    seed = options.seed if options.seed is not None else secrets.randbits(63)
    arch = device_arch(options.device)
    emit = on_row or (lambda row: None)
    rows: list[VerifyRow] = scan_rows(bundle, emit) if options.scan else []
    ops = [] if rows else bundle.ops
    early = [not_applicable(op, get_slot(op.entry.slot), options, arch) for op in ops]
    runnable = [i for i, row in enumerate(early) if row is None]
    bounds: set[str] = set()
    ahead: dict[int, ChildSession] = {}
    try:
        if runnable:
            ahead[runnable[0]] = _launch(bundle, options)
        env = _environment()  # probed while the first child starts, not after the last op
        if runnable:
            from .calls import verify_op  # imports torch while the first child starts (see the module docstring)
        for index, op in enumerate(ops):
            if early[index] is not None:
                emit(early[index])
                rows.append(early[index])
                continue
            following = next((i for i in runnable if i > index), None)
            if following is not None:
                ahead[following] = _launch(bundle, options)
            with ahead.pop(index) as child:
                rows += verify_op(child, bundle.identity, op, options, random.Random(f"{seed}:{index}:{op.key}"), emit)
                bounds |= set(child.bounds)
    finally:
        for child in ahead.values():
            child.close()
    return VerifyReport(
        bundle_id=bundle.manifest.bundle_id,
        identity=bundle.identity,
        seed=seed,
        device=options.device,
        arch=arch,
        sandboxed=options.sandboxed,
        bounds=sorted(bounds),
        rows=rows,
        seconds=round(time.monotonic() - started, 3),
        env=env,
    )


def _launch(bundle: Bundle, options: VerifyOptions) -> ChildSession:
    """A child for one op, started now; it becomes ready while the parent works on something else."""
    child = ChildSession(
        bundle.files,
        device=options.device,
        sandboxed=options.sandboxed,
        policy=options.sandbox_policy(),
        label=bundle.identity[:16],
    )
    try:
        child.launch(options.startup_timeout_s)
    except BaseException:
        child.close()
        raise
    return child


def device_arch(device: str) -> str:
    """cpu, or the GPU's sm_XX asked of a trusted subprocess so this process never creates a CUDA context."""
    if device == "cpu":
        return "cpu"
    probe = "import torch; assert torch.cuda.is_available(); print('sm_%d%d' % torch.cuda.get_device_capability())"
    try:
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InfrastructureError(f"cannot query the CUDA device: {e}") from None
    if r.returncode != 0:
        raise no_gpu("verify")
    return r.stdout.strip()


def _environment() -> dict | None:
    """The environment identity from hotfloat.env when that module exists (it is built separately)."""
    try:
        from ..env import collect
    except ImportError:
        return None
    return collect().model_dump(mode="json")
