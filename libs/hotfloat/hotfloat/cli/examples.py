"""`hotfloat demo --examples`: one bundle through load, scan, build and verify on CPU; refusals become rows."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..verdict import Status, combine


def judge(path: Path, seed: int | None) -> dict:
    """One bundle through load -> scan -> build -> verify, each path its ops need; refusals become rows, never errors."""
    from ..bundle import load_bundle
    from ..scan import scan_bundle
    from ..slots import get_slot
    from .options import note_ignored

    row = {"bundle": path.name, "identity": "", "scan": "", "build": "", "verify": "", "verdict": "", "detail": ""}
    try:
        bundle = note_ignored(load_bundle(path), str(path))
    except InputError as e:
        return row | {"scan": "INVALID", "verdict": Status.FAIL.value, "detail": str(e)}
    row["identity"] = bundle.identity[:12]
    report = scan_bundle(bundle)
    if not report.clean:
        first = next(f for op in report.ops for f in op.findings)
        return row | {"scan": "VIOLATIONS", "verdict": Status.FAIL.value, "detail": first}
    row["scan"] = "clean"
    results = []
    if any(op.entry.kind != "python" for op in bundle.ops):
        results.append(_native(bundle, seed, row))
    if any(get_slot(op.entry.slot).world_size > 1 for op in bundle.ops):
        results.append(_collective(bundle, seed))
    if any(op.entry.kind == "python" and get_slot(op.entry.slot).world_size == 1 for op in bundle.ops):
        results.append(_single(bundle, seed))
    status = combine([s for s, _ in results])
    detail = next((d for s, d in results if s is status), results[0][1])
    return row | {"verify": status.value, "verdict": status.value, "detail": detail, "seed": seed}


def _single(bundle, seed) -> tuple[Status, str]:
    from ..verify import VerifyOptions, verify_bundle

    result = verify_bundle(bundle, VerifyOptions(device="cpu", seed=seed))
    bad = [r for r in result.rows if r.status is not Status.PASS]
    if not bad:
        return result.status, f"{len(result.rows)} rows passed (seed {result.seed})"
    return result.status, f"{bad[0].slot} {bad[0].dtype} {bad[0].shape}: {bad[0].reason}"


def _collective(bundle, seed) -> tuple[Status, str]:
    from ..collective import verify_collective

    result = verify_collective(bundle, world_size=2, seed=seed)  # its default budget: Triton ranks run interpreted
    return result.status, f"world 2 ({result.backend}): {result.reasons[-1] if result.reasons else ''}"


def _native(bundle, seed, row) -> tuple[Status, str]:
    from ..compiler import build_bundle
    from ..admission.admit import admit

    record = build_bundle(bundle)
    row["build"] = f"{len(record.kernels)} cubins" if record.status is Status.PASS else record.status.value
    if record.status is Status.FAIL:
        return Status.FAIL, record.reasons[0]
    result = admit(bundle, record, seed=seed)
    return result.status, result.reasons[0] if result.reasons else ""
