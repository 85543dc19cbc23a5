"""`hotfloat demo`: scan and verify every bundle under a folder on CPU, and print one verdict table."""

from pathlib import Path

import click

from ..bundle import load_bundle
from ..errors import InputError
from ..scan import scan_bundle
from ..slots import get_slot
from ..verdict import Status, combine
from .output import emit_json, json_option, progress, table

COLUMNS = ("bundle", "identity", "scan", "build", "verify", "verdict", "detail")


def _judge(path: Path, seed: int | None) -> dict:
    """One bundle through load -> scan -> build -> verify, each path its ops need; refusals become rows, never errors."""
    row = {"bundle": path.name, "identity": "", "scan": "", "build": "", "verify": "", "verdict": "", "detail": ""}
    try:
        bundle = load_bundle(path)
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

    result = verify_collective(bundle, world_size=2, seed=seed, timeout_s=20.0)
    return result.status, f"world 2 ({result.backend}): {result.reasons[-1] if result.reasons else ''}"


def _native(bundle, seed, row) -> tuple[Status, str]:
    from ..build import build_bundle
    from ..native.admission import admit

    record = build_bundle(bundle)
    row["build"] = f"{len(record.kernels)} cubins" if record.status is Status.PASS else record.status.value
    if record.status is Status.FAIL:
        return Status.FAIL, record.reasons[0]
    result = admit(bundle, record, seed=seed)
    return result.status, result.reasons[0] if result.reasons else ""


@click.command("demo")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path), default="examples")
@click.option("--seed", type=int, default=None, help="Replay a run's secret seed (default: a fresh secret).")
@json_option
def demo(folder: Path, seed: int | None, as_json: bool) -> None:
    """Scan, build and verify every bundle in FOLDER on CPU and print the verdict table.

    Python ops run the verify protocol, collective ops the 2-rank verifier, ahead-of-time ops the deviceless
    build and the admission gate (the GPU load is reported as skipped without a GPU)."""
    bundles = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "manifest.toml").exists())
    rows = []
    with progress() as bar:
        task = bar.add_task("verifying", total=len(bundles))
        for path in bundles:
            bar.update(task, description=path.name)
            rows.append(_judge(path, seed))
            bar.advance(task)
    if as_json:
        emit_json(rows)
        return
    table(f"hotfloat demo: {len(rows)} bundles in {folder}", COLUMNS, [[r[k] for k in COLUMNS] for r in rows])
    counts = {s: sum(r["verdict"] == s for r in rows) for s in ("PASS", "FAIL", "N/A", "NO_DECISION")}
    click.echo("  ".join(f"{k}: {v}" for k, v in counts.items() if v))
