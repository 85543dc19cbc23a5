"""`hotfloat slots`: the registered slots, their signatures, dtypes, shapes and tolerances."""

import click

from ..slots import SLOTS
from .output import emit_json, json_option, table


@click.command("slots")
@json_option
def slots(as_json: bool) -> None:
    """List the registered slots and their contracts."""
    rows = []
    for s in SLOTS.values():
        rows.append({
            "name": s.name,
            "signature": s.signature(),
            "summary": s.summary,
            "dtypes": list(s.dtypes),
            "shapes": [dict(sh.dims) for sh in s.shapes],
            "tolerance": {d: {"atol": t.atol, "rtol": t.rtol} for d, t in s.tolerances.items()},
            "world_size": s.world_size,
        })
    if as_json:
        emit_json(rows)
        return
    table("hotfloat slots", ["slot", "signature", "dtypes", "verification shapes", "tolerance (atol=rtol)"], [
        (r["name"], r["signature"], " ".join(r["dtypes"]),
         " ".join("x".join(str(v) for v in sh.values()) for sh in r["shapes"]),
         " ".join(f"{d}:{t['atol']:g}" for d, t in r["tolerance"].items()))
        for r in rows
    ])
