"""`hotfloat verify`: run a bundle's kernels in sandboxed children and judge them against the trusted references."""

import logging
import sys

import click

from ..bundle import load_bundle
from ..slots import DTYPES
from ..verdict import Status
from ..verify import VerifyOptions, verify_bundle
from .output import emit_json, json_option, table

EXIT = {Status.PASS: 0, Status.FAIL: 2, Status.N_A: 2, Status.NO_DECISION: 1}


@click.command("verify")
@click.argument("bundle", type=click.Path(file_okay=False, path_type=str))
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="cpu runs Triton through its interpreter; cuda adds CUDA-graph capture and replays.")
@click.option("--seed", type=click.IntRange(0, (1 << 63) - 1), default=None,
              help="Replay a run's secret seed (default: a fresh secret, printed in the report).")
@click.option("--dtype", "dtypes", multiple=True, type=click.Choice(sorted(DTYPES)), help="Only these dtypes.")
@click.option("--trials", type=click.IntRange(1, 20), default=3, show_default=True, help="Calls per shape.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 3600), default=120.0, show_default=True,
              help="Per-op wall-clock budget in seconds; a hung kernel is killed at it and FAILs.")
@click.option("--unsandboxed", is_flag=True,
              help="Run candidates WITHOUT the sandbox (local development on trusted code only).")
@click.option("--world-size", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Ranks for collective ops (gloo on cpu, NCCL on cuda); above 1 verifies only collective ops.")
@json_option
def verify(bundle: str, device: str, seed: int | None, dtypes: tuple[str, ...], trials: int, timeout_s: float,
           unsandboxed: bool, world_size: int, as_json: bool) -> None:
    """Verify BUNDLE's ops: exit 0 all applicable pass, 2 any fail or nothing applicable, 1 infrastructure error."""
    b = load_bundle(bundle)
    if world_size > 1:
        _verify_collective(b, world_size, device, seed, list(dtypes) or None, timeout_s, not unsandboxed, as_json)
        return
    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho("WARNING: --unsandboxed: candidate code runs with your files, environment and network.",
                    fg="red", bold=True, err=True)
    options = VerifyOptions(device=device, seed=seed, trials=trials, timeout_s=timeout_s, sandboxed=not unsandboxed,
                            dtypes=list(dtypes) or None)
    report = verify_bundle(b, options)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        sandbox = "+".join(report.bounds) if report.sandboxed else "NONE (--unsandboxed)"
        title = (f"verify {report.bundle_id} {report.identity[:12]}  device={report.device} ({report.arch})  "
                 f"seed={report.seed}  sandbox={sandbox}")
        table(title, ["slot", "variant", "dtype", "shape", "tokens", "max err", "trials", "status", "reason"], [
            (r.slot, r.variant, r.dtype, r.shape, " ".join(map(str, r.counts)),
             "" if r.max_abs_err is None else f"{r.max_abs_err:.3g}", r.trials, r.status.value, r.reason)
            for r in report.rows
        ])
        click.echo(f"{report.status.value} in {report.seconds:.1f}s (replay with --seed {report.seed})")
    sys.exit(EXIT[report.status])


def _verify_collective(b, world_size, device, seed, dtypes, timeout_s, sandboxed, as_json) -> None:
    """--world-size N: every collective op on N ranks; the whole run aborts on any rank's fault."""
    from ..collective import verify_collective

    report = verify_collective(b, world_size=world_size, device=device, seed=seed, dtypes=dtypes, timeout_s=timeout_s,
                               sandboxed=sandboxed)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        table(f"verify {report.bundle_id} {report.identity[:12]}  world={report.world_size} ({report.backend} on "
              f"{report.device})  seed={report.seed}", ["case", "dtype", "shape", "max err", "status", "reason"],
              [(r.index, r.dtype, r.shape, "" if r.max_abs_err is None else f"{r.max_abs_err:.3g}", r.status.value,
                r.reason) for r in report.rows])
        click.echo(f"{report.status.value} in {report.seconds:.1f}s: {'; '.join(report.reasons)}")
    sys.exit(EXIT[report.status])
