"""`hotfloat verify`: run a bundle's kernels in sandboxed children and judge them against the trusted references."""

from __future__ import annotations

import logging
import shutil
import textwrap

import click

from ..slots import DTYPES
from ..devices import resolve_device
from .options import bundle_argument, device_option, open_bundle, seed_option
from .output import emit_json, exit_with, json_option, stderr_is_tty, table


@click.command("verify")
@bundle_argument
@device_option("cpu runs Triton through its interpreter; cuda adds CUDA-graph capture and replays.")
@seed_option("the plan and inputs of every case")
@click.option("--dtype", "dtypes", multiple=True, type=click.Choice(sorted(DTYPES)), help="Only these dtypes.")
@click.option("--trials", type=click.IntRange(1, 20), default=3, show_default=True, help="Calls per shape.")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(1, 3600),
    default=120.0,
    show_default=True,
    help="Per-op wall-clock budget in seconds; a hung kernel is killed at it and FAILs.",
)
@click.option(
    "--unsandboxed", is_flag=True, help="Run candidates WITHOUT the sandbox (local development on trusted code only)."
)
@click.option(
    "--world-size",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Ranks for collective ops (gloo on cpu, NCCL on cuda); above 1 verifies only collective ops.",
)
@json_option
def verify(
    bundle: str,
    device: str,
    seed: int | None,
    dtypes: tuple[str, ...],
    trials: int,
    timeout_s: float,
    unsandboxed: bool,
    world_size: int,
    as_json: bool,
) -> None:
    """Verify BUNDLE's ops: exit 0 all applicable pass, 1 any FAIL, 4 nothing applicable, 3 infrastructure error.

    With a terminal on stderr, one line per row is printed there as soon as its verdict is final."""
    from ..verify import VerifyOptions, verify_bundle

    b = open_bundle(bundle)
    device = resolve_device(device)
    if world_size > 1:
        _verify_collective(b, world_size, device, seed, list(dtypes) or None, timeout_s, not unsandboxed, as_json)
        return
    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho(
            "WARNING: --unsandboxed: candidate code runs with your files, environment and network.",
            fg="red",
            bold=True,
            err=True,
        )
    options = VerifyOptions(
        device=device,
        seed=seed,
        trials=trials,
        timeout_s=timeout_s,
        sandboxed=not unsandboxed,
        dtypes=list(dtypes) or None,
    )
    report = verify_bundle(b, options, on_row=_stream if stderr_is_tty() else None)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        render(report)
    exit_with(report.status)


def _stream(row) -> None:
    """One stderr line per finished row, so a 30-second CPU run shows its progress."""
    err = "" if row.max_abs_err is None else f" err {row.max_abs_err:.2g}"
    line = f"{row.status.value:<4} {row.slot} {row.dtype} {row.shape}{err} {row.reason}".rstrip()
    click.echo(line[: shutil.get_terminal_size((80, 24)).columns - 1], err=True)


def render(report, width: int | None = None) -> None:
    """The verdict for people: fits 80 columns, and every non-PASS row's reason is printed whole beneath the table."""
    width = width or _width()
    # bounds are those the children held: none when no child started (every op N/A or refused by scan)
    sandbox = ("+".join(report.bounds) or "unused (no kernel ran)") if report.sandboxed else "NONE (--unsandboxed)"
    head = [
        f"verify {report.bundle_id} {report.identity[:12]}",
        f"device={report.device} ({report.arch})",
        f"seed={report.seed}",
        f"sandbox={sandbox}",
    ]
    ops = list(dict.fromkeys(r.slot if r.variant == "default" else f"{r.slot}:{r.variant}" for r in report.rows))
    if len(ops) == 1:  # one op: name it once, so the columns that vary keep the width
        head.append(f"op={ops[0]}")
    click.echo(_head(head, width))
    columns = ["#", "op", "dtype", "shape", "tokens", "max err", "status"]
    rows = [
        (
            i,
            r.slot if r.variant == "default" else f"{r.slot}:{r.variant}",
            r.dtype,
            r.shape,
            " ".join(map(str, r.counts)),
            "" if r.max_abs_err is None else f"{r.max_abs_err:.3g}",
            r.status.value,
        )
        for i, r in enumerate(report.rows, 1)
    ]
    if len(ops) == 1:
        columns.remove("op")
        rows = [(row[0], *row[2:]) for row in rows]
    table(None, columns, rows, width=width)
    for numbers, r in report.reasons():  # one line per distinct reason, naming every row that gave it
        click.echo(textwrap.fill(f"{_rows(numbers)} {r.status.value}: {r.reason}", width, subsequent_indent="    "))
    click.echo(f"{report.status.value} in {report.seconds:.1f}s (replay with --seed {report.seed})")


def _rows(numbers: list[int]) -> str:
    """Row numbers as runs: [1, 2, 3, 7] -> '#1-3, #7'."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"#{r[0]}" if len(r) == 1 else f"#{r[0]}-{r[-1]}" for r in runs)


def _width() -> int:
    return min(shutil.get_terminal_size((80, 24)).columns, 120)


def _head(fields: list[str], width: int) -> str:
    """A report's first line, wrapped only between its fields, so none is broken mid-phrase (`world=2 (gloo on
    cpu)`); continuation lines are indented."""
    lines = [fields[0]]
    for field in fields[1:]:
        if len(lines[-1]) + 2 + len(field) <= width:
            lines[-1] += f"  {field}"
        else:
            lines.append(f"  {field}")
    return "\n".join(lines)


def _verify_collective(b, world_size, device, seed, dtypes, timeout_s, sandboxed, as_json) -> None:
    """--world-size N: every collective op on N ranks; the whole run aborts on any rank's fault."""
    from ..collective import verify_collective

    report = verify_collective(
        b, world_size=world_size, device=device, seed=seed, dtypes=dtypes, timeout_s=timeout_s, sandboxed=sandboxed
    )
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        width = _width()
        head = [
            f"verify {report.bundle_id} {report.identity[:12]}",
            f"world={report.world_size} ({report.backend} on {report.device})",
            f"seed={report.seed}",
            "sandboxed" if report.sandboxed else "sandbox=NONE (--unsandboxed)",
        ]
        click.echo(_head(head, width))
        table(
            None,
            ["case", "dtype", "shape", "max err", "status", "reason"],
            [
                (
                    r.index,
                    r.dtype,
                    r.shape,
                    "" if r.max_abs_err is None else f"{r.max_abs_err:.3g}",
                    r.status.value,
                    r.reason,
                )
                for r in report.rows
            ],
            width=width,
        )
        verdict = f"{report.status.value} in {report.seconds:.1f}s: {'; '.join(report.reasons)}"
        click.echo(textwrap.fill(verdict, width, subsequent_indent="    "))
    exit_with(report.status)
