"""`hotfloat slots`: the registered slots, the exact call each entry receives, dtypes, shapes and tolerances."""

import shutil
import textwrap

import click

from ..errors import ExitCode
from ..slots import SLOTS, Role
from .output import emit_json, json_option, table


@click.command("slots")
@json_option
@click.option(
    "--share",
    is_flag=True,
    help="Show the share of an engine step each slot holds (decode and prefill, measured on a GPU and committed), "
    "where a faster kernel can move the whole engine; exits 4 when no measurement is committed.",
)
def slots(as_json: bool, share: bool) -> None:
    """List the registered slots: the call your entry receives (arguments in order), what it must write, dtypes,
    verification shapes and tolerances."""
    if share:
        _share(as_json)
        return
    rows = []
    for s in SLOTS.values():
        rows.append(
            {
                "name": s.name,
                "signature": s.signature(),
                "args": [
                    {"name": a.name, "role": a.role.value, "dtype": a.dtype, "shape": list(a.shape)} for a in s.args
                ],
                "writes": [a.name for a in s.of_role(Role.OUTPUT)],
                "summary": s.summary,
                "dtypes": list(s.dtypes),
                "shapes": [dict(sh.dims) for sh in s.shapes],
                "tolerance": {d: {"atol": s.tolerances[d].atol, "rtol": s.tolerances[d].rtol} for d in s.dtypes},
                "world_size": s.world_size,
            }
        )
    if as_json:
        emit_json(rows)
        return
    width = min(shutil.get_terminal_size((100, 24)).columns, 120)
    for r in rows:  # one block per slot: readable at 80 columns, where a five-column table is not
        tol = ", ".join(f"{d} {t['atol']:g}" for d, t in r["tolerance"].items())
        click.echo(textwrap.fill(f"{r['name']}  ({r['summary']})", width, subsequent_indent=" " * 4))
        for label, text in (
            ("call", r["signature"]),
            ("writes", " ".join(r["writes"])),
            ("dtypes", f"{' '.join(r['dtypes'])}  (atol = rtol: {tol})"),
            ("ranks", str(r["world_size"]) if r["world_size"] > 1 else ""),
            ("shapes", "  ".join(",".join(f"{k}={v}" for k, v in sh.items()) for sh in r["shapes"])),
        ):
            if text:
                click.echo(textwrap.fill(text, width, initial_indent=f"  {label:<7} ", subsequent_indent=" " * 10))
        click.echo()


def _share(as_json: bool) -> None:
    """The committed slot-share records, a table per model and step kind; never a number no device run measured."""
    from ..slots.share import NOT_MEASURED, load_records, rows

    records = load_records()
    if not records:
        if as_json:
            emit_json({"measured": False, "note": NOT_MEASURED})
        else:
            click.echo(textwrap.fill(NOT_MEASURED, min(shutil.get_terminal_size((100, 24)).columns, 120)))
        raise SystemExit(ExitCode.NOT_APPLICABLE)
    if as_json:
        emit_json([r.model_dump(mode="json") for r in records])
        return
    for r in records:
        click.echo(f"{r.gpu}, measured {r.measured_at} by: {r.command}")
        for m in r.models:
            for kind in ("decode", "prefill"):
                step = getattr(m, kind)
                title = (
                    f"{m.preset} ({m.dtype}) {kind}: {step.tokens} tokens, {step.step_us / 1e3:.2f} ms of GPU time "
                    f"per step, mean of {step.steps}"
                )
                cells = [
                    (
                        slot,
                        "-" if us is None else f"{us:.1f}",
                        "not measured" if frac is None else f"{frac:.1%}",
                        f"{n:g}",
                    )
                    for slot, us, frac, n in rows(step)
                ]
                table(title, ("slot", "us/step", "share", "calls/step"), cells, compact=True)
