"""`hotfloat qualify calibrate collect`: the one calibration step that needs the device: boot resident stock,
handicapped and candidate engines and write their raw pass timings, round by round, for `analyse` and `evidence`."""

from __future__ import annotations

import click

from .options import seed_option
from .qualify_options import engine_options, qualify_options


@click.command("collect")
@engine_options
@click.option(
    "--stock",
    type=click.IntRange(1, 8),
    default=3,
    show_default=True,
    help="Stock engines to boot (B1, B2, ...; three make a null qualification, one is C of a positive control).",
)
@click.option(
    "--handicap",
    "handicaps",
    multiple=True,
    metavar="EFFECT COUNT",
    type=(click.FloatRange(0, 0.5, min_open=True, max_open=True), click.IntRange(1, 8)),
    help="Also boot COUNT stock engines slowed by a validator-added GPU delay after every activation call, "
    "sized so a stock engine saves EFFECT of their pass (H1, H2, ...; the positive control; repeatable).",
)
@click.option(
    "--handicap-pass-ms",
    type=click.FloatRange(1, 600000),
    default=1300,
    show_default=True,
    help="The stock pass the handicap is sized against (the llama-8b default pass on the H200).",
)
@click.option("--max-rounds", type=click.IntRange(1, 100000), default=None, help="Stop after this many rounds.")
@click.option(
    "--export-cache",
    type=click.Path(file_okay=False),
    default=None,
    help="After the rounds, copy stock engine B1's JIT caches here (e.g. $HOTFLOAT_ENGINE_ROOT/cache, which "
    "warms later engines' JIT caches).",
)
@click.option(
    "--candidate",
    "candidates",
    type=click.Path(file_okay=False, exists=True),
    multiple=True,
    help="Also boot an engine with this bundle armed (C1, C2, ... in order; repeatable).",
)
@click.option(
    "--keep-rounds",
    type=click.IntRange(0, 1000),
    default=0,
    show_default=True,
    help="Keep the completions of B1, B2 and the candidates in this many first rounds (for `evidence`).",
)
@click.option(
    "--budget",
    type=click.FloatRange(10, 36000),
    default=300,
    show_default=True,
    help="Wall seconds for the whole collection, boots included; the last round ends before it.",
)
@seed_option("the prompts and the order of each round")
@click.option(
    "--boot-timeout",
    type=click.FloatRange(1, 3600),
    default=None,
    help="Seconds the engines get to boot, arm and warm up [default: 900].",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, writable=True),
    required=True,
    help="Raw JSON, rewritten after every round.",
)
def collect_cmd(
    stock, handicaps, handicap_pass_ms, max_rounds, export_cache, candidates, keep_rounds, budget, out_path, **flags
):
    """Boot STOCK stock engines (and handicapped and candidate ones) as resident engines and time rounds until the
    budget is spent."""
    import sys
    from pathlib import Path

    from ..errors import InfrastructureError
    from ..qualify.calibrate.collect import collect
    from ..qualify.isolation.resident import EngineFault

    opts = qualify_options(**flags)
    handicap: dict[float, int] = {}
    for effect, count in handicaps:
        handicap[effect] = handicap.get(effect, 0) + count
    try:
        raw = collect(
            opts,
            Path(out_path),
            stock=stock,
            handicap=handicap,
            handicap_pass_s=handicap_pass_ms / 1e3,
            candidates={f"C{i + 1}": c for i, c in enumerate(candidates)},
            budget_s=budget,
            max_rounds=max_rounds,
            keep_rounds=keep_rounds,
            export_cache=export_cache,
            progress=lambda m: click.echo(m, err=True),
            command=" ".join(["hotfloat", *sys.argv[1:]]),
        )
    except (RuntimeError, EngineFault) as e:
        raise InfrastructureError(f"calibration collection stopped: {str(e)[:1500]}") from None
    click.echo(f"{len(raw.rounds)} rounds of {len(raw.engines)} engines -> {out_path}")
