"""`hotfloat demo`: the whole arena on this machine's CPU, or (`--examples`) every example bundle judged against the
verdict it is meant to get."""

from __future__ import annotations

import shutil
import tempfile
import textwrap
import time
import tomllib
from pathlib import Path

import click

from ..errors import ExitCode, InputError
from .options import seed_option
from .output import emit_json, json_option, progress, table

STAGES = ("intake", "scan", "build", "admit", "qualify", "score")
EXPECTED = "expected.toml"


@click.command("demo")
@click.option(
    "--handicap",
    type=click.IntRange(0, 1024),
    default=128,
    show_default=True,
    help="Extra stock activation passes in the baseline engine, so a CPU can show a speed-up (0: none).",
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the chain, wallets, ledger and sockets here (default: a temporary folder, removed after).",
)
@click.option(
    "--examples",
    "examples",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help=f"Instead: scan, build and verify every bundle in this folder against its {EXPECTED}.",
)
@seed_option("with --examples, the inputs every example is verified on")
@json_option
def demo(handicap: int, workdir: Path | None, examples: Path | None, seed: int | None, as_json: bool) -> None:
    """Run the arena on CPU: five miners commit digests and reveal bundles on a stand-in chain (one honest, one
    broken, two cheating, one copying the honest one), and the validator takes them in (refusing the copy) and runs
    scan, build, verify, qualification on the CPU engine, settlement, crowns and weights; each miner reads its signed
    report; then a summary. Exit 0 when every outcome is the expected one, 1 otherwise."""
    if examples is not None:
        _examples(examples, seed, as_json)
        return
    from .arena import run_arena

    root = workdir or Path(tempfile.mkdtemp(prefix="hotfloat-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        outcome = run_arena(
            root.resolve(), handicap, lambda msg: click.echo(f"[{time.monotonic() - started:5.0f}s] {msg}", err=True)
        )
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    if as_json:
        emit_json(
            {
                "rows": [vars(r) for r in outcome.rows],
                "weights": outcome.weights,
                "settings": outcome.settings,
                "seconds": round(outcome.seconds, 1),
            }
        )
    else:
        _summary(outcome)
    raise SystemExit(ExitCode.OK if all(r.as_expected for r in outcome.rows) else ExitCode.FAIL)


def _summary(outcome) -> None:
    """Settings first, then the table, each miner's reason, the weights explained, and the verdict as the last line."""
    from ..validator.crowns import RUNNER_UP_SHARE, WINNER_SHARE

    width = min(shutil.get_terminal_size((100, 24)).columns, 120)
    click.echo("how this demo differs from a validator's deployment:")
    for line in outcome.settings:
        click.echo(textwrap.fill(line, width, initial_indent="  - ", subsequent_indent="    "))
    table(
        f"hotfloat demo: the arena in {outcome.seconds:.0f}s",
        ["uid", "miner", *STAGES, "crown", "share", "expected"],
        [
            (
                r.uid,
                r.miner,
                *(r.stages.get(s, "") for s in STAGES),
                r.crown,
                f"{r.weight:.2f}",
                "yes" if r.as_expected else "NO",
            )
            for r in outcome.rows
        ],
        width=width,
    )
    for r in outcome.rows:
        line = f"{r.miner} ({r.role}): {r.state}" + (f", score {r.score:.4f}" if r.score is not None else "")
        first, *more = r.reason.split("; ")  # a failed stage lists every failing row; the first says enough here
        why = first + (f" (and {len(more)} more)" if more and r.state == "failed" else "; ".join(["", *more]))
        click.echo(textwrap.fill(f"{line}. {why}", width, subsequent_indent="    "))
        if r.state == "failed" and r.not_shown:
            click.echo(
                textwrap.fill(
                    "    This CPU's run-to-run noise hid the difference within the rounds the rule "
                    "allows, and the burden of proof is the candidate's; on a quiet GPU host the "
                    "same rule resolves 2% (docs/qualification.md).",
                    width,
                    subsequent_indent="    ",
                )
            )
        for line in r.report:
            click.echo(
                textwrap.fill(f"report (signed feed) {line}", width, initial_indent="    ", subsequent_indent="      ")
            )
        if not r.as_expected:
            click.echo(f"    UNEXPECTED: the demo expected {r.expected}")
    row = dict(sorted(outcome.weights.items()))
    shares = (
        f"the validator's weight row on chain (u16 by uid) is {row}. A crown pays its winner {WINNER_SHARE:g} and its "
        f"runner-up {RUNNER_UP_SHARE:g} of the slot's pool (the shares the validator logs as it sets weights), a "
        "share nobody holds is left out, and the chain uses only proportions: `share` is each uid's part of this "
        "validator's weight"
        if row
        else "no weights set: nothing was crowned"
    )
    click.echo(textwrap.fill(f"weights: {shares}.", width, subsequent_indent="    "))
    unexpected = [r for r in outcome.rows if not r.as_expected]
    click.echo(
        "demo: every miner ended where it should (exit 0)"
        if not unexpected
        else f"demo: {', '.join(r.miner for r in unexpected)} did not end where expected (exit 1)"
    )


def _examples(folder: Path, seed: int | None, as_json: bool) -> None:
    """Every example bundle through scan, build and verify; any verdict other than the one it is meant to get fails."""
    from .examples import judge

    if not (folder / EXPECTED).is_file():
        raise InputError(
            f'{folder} has no {EXPECTED} (one `bundle = "PASS"` line per bundle it holds); for one '
            f"bundle, run `hotfloat verify {folder}`"
        )
    try:
        expected = tomllib.loads((folder / EXPECTED).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"{folder / EXPECTED}: {e}") from None
    bundles = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "manifest.toml").exists())
    rows = []
    with progress() as bar:
        task = bar.add_task("verifying", total=len(bundles))
        for path in bundles:
            bar.update(task, description=path.name)
            row = judge(path, seed)
            row["expected"] = expected.get(path.name, "(missing)")
            row["as_expected"] = row["verdict"] == row["expected"]
            rows.append(row)
            bar.advance(task)
    if as_json:
        emit_json(rows)
    else:
        columns = ("bundle", "scan", "build", "verify", "verdict", "expected")
        table(f"hotfloat demo: {len(rows)} bundles in {folder}", columns, [[r[k] for k in columns] for r in rows])
        for r in rows:
            if r["detail"] and r["verdict"] != "PASS":
                click.echo(textwrap.fill(f"{r['bundle']}: {r['detail']}", 100, subsequent_indent="    "))
    raise SystemExit(ExitCode.OK if all(r["as_expected"] for r in rows) else ExitCode.FAIL)
