"""`hotfloat bench`: time a bundle's kernels against the engine's stock kernels and the device's measured limits."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import click

from ..slots import DTYPES
from ..devices import resolve_device
from .options import bundle_argument, device_option, open_bundle, seed_option
from .output import emit_json, exit_with, fit, json_option, natural_width, progress, table, wide_option

SETS = ("bench", "decode", "all")
"""hotfloat.bench.shapes.SETS, spelled out so `--help` needs no torch (a test keeps them equal)."""


@click.command("bench")
@bundle_argument
@device_option("Where to run (CPU numbers are meaningless: interpreter mode).")
@click.option(
    "--dtype",
    "dtypes",
    multiple=True,
    type=click.Choice(sorted(DTYPES)),
    default=("bf16",),
    show_default=True,
    help="Dtypes to time (repeatable).",
)
@click.option(
    "--shapes",
    "shape_set",
    type=click.Choice(SETS),
    default="all",
    show_default=True,
    help="bench: the slot's bench shapes; decode: 1-128 tokens at hidden 2880/4096/8192; all: both.",
)
@click.option("--shape", "shapes", multiple=True, metavar="T=8,D=4096", help="Time only these shapes (repeatable).")
@click.option(
    "--budget",
    type=click.FloatRange(min=0.0),
    default=None,
    help="Seconds per measurement before the 1% relative-standard-error rule gives up.",
)
@seed_option("the random inputs of every shape", fixed=True)
@click.option(
    "--stock",
    "stock",
    multiple=True,
    metavar="MODULE",
    help="Stock library timed beside torch's paths (repeatable; default: sgl_kernel, flashinfer and, for "
    "attention.decode and attention.prefill, sglang's triton kernels, when they load; 'none' for torch only).",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Also write a PNG of speedup and fraction of copy bandwidth per shape.",
)
@click.option(
    "--save",
    "save_path",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Also write the JSON report to this file (the table still goes to stdout).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(1, 86400),
    default=3600.0,
    show_default=True,
    help="Seconds for the whole run once the child is up; the child is killed at it (exit 3).",
)
@click.option(
    "--unsandboxed",
    is_flag=True,
    help="Run the bundle's kernels WITHOUT the sandbox, with your files, environment and caches (your own code only).",
)
@wide_option
@json_option
def bench(
    bundle: str,
    device: str,
    dtypes: tuple[str, ...],
    shape_set: str,
    shapes: tuple[str, ...],
    budget: float | None,
    seed: int,
    stock: tuple[str, ...],
    plot_path: str | None,
    save_path: str | None,
    timeout_s: float,
    unsandboxed: bool,
    wide: bool,
    as_json: bool,
) -> None:
    """Time BUNDLE's kernels on each slot's shapes beside the stock kernels, checking outputs before and after.

    The kernels run in a sandboxed child, as in `verify`; exit 3 when no sandbox can be built here."""
    from ..bench import Options, plot, run_bench
    from ..bench.shapes import parse_shape

    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho(
            "WARNING: --unsandboxed: the bundle's code runs with your files, environment and network.",
            fg="red",
            bold=True,
            err=True,
        )

    opts = Options(
        device=resolve_device(device),
        dtypes=dtypes,
        shape_set=shape_set,
        shapes=tuple(map(parse_shape, shapes)),
        budget_s=budget,
        seed=seed,
    )
    if stock:
        opts = dataclasses.replace(opts, stock=tuple(s for s in stock if s != "none"))
    b = open_bundle(bundle)
    with progress() as bar:
        task = bar.add_task("bench", total=None)
        report = run_bench(
            b,
            opts,
            lambda done, total, label: bar.update(task, completed=done, total=total, description=label),
            sandboxed=not unsandboxed,
            timeout_s=timeout_s,
        )
    if save_path:  # before the plot: a host without matplotlib must not lose a finished bench
        Path(save_path).write_text(report.model_dump_json(indent=2))
    if plot_path:
        try:
            plot(report, plot_path)
        except ImportError as e:
            click.echo(f"warning: no plot ({e}); the results are complete without it", err=True)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        _render(report, wide)
    if report.status == "N/A":
        click.echo(
            f"N/A: no op of {report.bundle_id} is built for {report.device}; every row timed the stock kernels only",
            err=True,
        )
    exit_with(report.status)


NARROW_COLUMNS = ("slot", "dtype", "shape", "us", "ours/best", "% copy", "check")
"""Without --wide, in a terminal too narrow for every column: what fits 80 (the stock kernel's name and time, cold
time, GB/s, GEMM and floor need a wider terminal, --wide or --json)."""


def _render(r, wide: bool) -> None:
    c = r.ceilings
    click.echo(f"note: {r.note}", err=True)
    click.echo(f"sandbox: {'+'.join(r.bounds) if r.sandboxed else 'NONE (--unsandboxed)'}", err=True)
    floor = f"{c.floor_graph_us:.2f} us (graph)" if c.floor_graph_us else f"{c.floor_cold_us:.1f} us (cold)"
    click.echo(
        f"ceilings: copy {c.copy_Bps / 1e9:.0f} GB/s, GEMM {c.gemm_flops / 1e12:.1f} TFLOP/s, launch floor {floor}"
        f" | {' '.join(f'{k}={v}' for k, v in r.environment.items())}",
        err=True,
    )
    for s in r.skipped:
        click.echo(f"stock {s.name} skipped for {s.slot}: {s.reason}", err=True)
    rows = []
    for row in r.rows:
        stock = {i.name: (i.graph or i.cold).median_us for i in row.impls if i.cold and not i.name.startswith("ours")}
        best = row.best_stock or min(stock, key=stock.get, default=None)
        ours = row.impls[0] if row.impls and row.impls[0].name.startswith("ours") else None
        rows.append(
            (
                row.slot,
                row.dtype,
                "x".join(str(v) for v in row.dims.values()),
                f"{row.time_us:.2f}" if row.time_us else ("raised" if ours else "stock"),
                f"{ours.cold.median_us:.2f}" if ours and ours.cold else "",
                f"{best} {stock[best]:.2f}" if best else "",
                f"{row.ratio_best:.2f}" if row.ratio_best else "",
                f"{row.bandwidth_Bps / 1e9:.0f}" if row.bandwidth_Bps else "",
                f"{100 * row.frac_copy_bw:.1f}%" if row.frac_copy_bw else "",
                f"{100 * row.frac_gemm:.2f}%" if row.frac_gemm else "",
                f"{row.floor_multiple:.2f}" if row.floor_multiple else "",
                ours.check if ours else "N/A",
            )
        )
    columns = [
        "slot",
        "dtype",
        "shape",
        "us",
        "cold us",
        "best stock us",
        "ours/best",
        "GB/s",
        "% copy",
        "% GEMM",
        "x floor",
        "check",
    ]
    width = fit(wide)
    every = wide or natural_width(columns, rows, compact=True) <= width
    keep = [i for i, c in enumerate(columns) if every or c in NARROW_COLUMNS]
    table(
        f"hotfloat bench {r.bundle_id} ({r.device}, status {r.status})",
        [columns[i] for i in keep],
        [[row[i] for i in keep] for row in rows],
        width=width,
        compact=not wide,
        fold=True,
    )
    if not every:
        click.echo("more columns (stock kernel, cold, GB/s, GEMM, launch floor): --wide or --json", err=True)
