"""`hotfloat slots`: the registered slots, the exact call each entry receives, dtypes, shapes and tolerances."""

import shutil
import textwrap

import click

from ..slots import SLOTS, Role
from .output import emit_json, json_option


@click.command("slots")
@json_option
def slots(as_json: bool) -> None:
    """List the registered slots: the call your entry receives (arguments in order), what it must write, dtypes,
    verification shapes and tolerances."""
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
