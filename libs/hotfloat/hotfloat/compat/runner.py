"""Running a compatibility table in the interpreter that owns the packages, and judging its rows.

SGLang lives in the engine venv (its pinned torch differs from the CLI's), so every table runs through `probe.py`
in a child interpreter and comes back as JSON; the CLI's own environment is never assumed to be the checked one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..errors import InfrastructureError
from ..record import Record
from ..verdict import Status, combine
from .chain_table import BITTENSOR
from .tables import SGLANG

PROBE = Path(__file__).with_name("probe.py")
ENV_ENGINE_PYTHON = "HOTFLOAT_ENGINE_PYTHON"
"""Interpreter of the engine venv; default: .venv-engine/bin/python next to the running venv."""
TIMEOUT_S = 600


class CompatRow(Record):
    """One checked symbol (or the version pin) and what was found."""

    name: str
    """What was checked, e.g. "RMSNorm.forward_cuda"."""
    status: Status
    """PASS when present with the expected parameters, FAIL otherwise."""
    detail: str
    """The signature found, or why it failed."""


class CompatReport(Record):
    """A whole table's result in one interpreter."""

    target: str
    """"sglang" or "bittensor"."""
    python: str
    """The interpreter the probe ran in."""
    status: Status
    """FAIL if any row failed."""
    rows: list[CompatRow]


def engine_python() -> str:
    """The engine venv's interpreter: $HOTFLOAT_ENGINE_PYTHON, else .venv-engine beside the running venv."""
    return os.environ.get(ENV_ENGINE_PYTHON) or str(Path(sys.prefix).parent / ".venv-engine" / "bin" / "python")


def check(target: str, python: str | None = None) -> CompatReport:
    """Runs the `sglang` or `bittensor` table in `python` (default: engine venv / this interpreter)."""
    table = {"sglang": SGLANG, "bittensor": BITTENSOR}[target]
    python = python or (engine_python() if target == "sglang" else sys.executable)
    if not Path(python).exists():
        raise InfrastructureError(
            f"{python} does not exist (build the engine venv with `make engine`, "
            f"or point {ENV_ENGINE_PYTHON} at an interpreter with {target})"
        )
    registry = None
    if target == "sglang":
        seam_rows, registry = _seam_checks(python)
        table = [*table, *seam_rows]
    raw = _json_of(python, [str(PROBE), json.dumps(table)], target)
    try:
        rows = [
            CompatRow(name=r["name"], status=Status.PASS if r["ok"] else Status.FAIL, detail=r["detail"]) for r in raw
        ]
    except (ValueError, KeyError, TypeError):
        raise InfrastructureError(f"the {target} probe in {python} returned malformed rows") from None
    if len(rows) != len(table):
        raise InfrastructureError(f"the {target} probe returned {len(rows)} rows for {len(table)} checks")
    if registry is not None:
        rows.insert(1, registry)
    return CompatReport(target=target, python=python, status=combine([r.status for r in rows]), rows=rows)


def _seam_checks(python: str) -> tuple[list[dict], CompatRow]:
    """The seams' own rows, read from the registry in the engine interpreter (hotfloat_sglang lives there), and a row
    for the registry itself: a missing plugin or a refused registry fails compat rather than hiding its rows."""
    try:
        found = _json_of(python, ["-m", "hotfloat_sglang.seams"], "seam registry")
        seams, rows = found["seams"], found["checks"]
        detail = "; ".join(f"{','.join(s['slots'])} at {len(s['targets'])} target(s)" for s in seams)
        return list(rows), CompatRow(name="seam registry", status=Status.PASS, detail=detail)
    except (InfrastructureError, KeyError, TypeError) as e:
        return [], CompatRow(name="seam registry", status=Status.FAIL, detail=str(e)[:300])


def _json_of(python: str, argv: list[str], what: str):
    """Runs `python argv` and parses its last stdout line as JSON."""
    try:
        done = subprocess.run(
            [python, *argv], capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise InfrastructureError(f"the {what} probe ran past {TIMEOUT_S} s in {python}") from None
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise InfrastructureError(f"the {what} probe in {python} failed (exit {done.returncode}): {tail[0]}") from None
