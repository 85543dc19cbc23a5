"""Shared output: `--json` for machines, rich tables for people on stdout, progress on stderr (a bar on a TTY, a
timestamped line per step in a log)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import ExitCode
from ..verdict import Status

STATUS_STYLE = {
    "PASS": "green",
    "FAIL": "bold red",
    "NO_DECISION": "yellow",
    "N/A": "dim",
    "ok": "green",
    "FAIL!": "bold red",
}


def json_option(fn):
    """Adds --json: print one JSON document instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table.")(fn)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


WIDE = 1000


def wide_option(fn):
    """Adds --wide: every column at full width (default: the table fits the terminal)."""
    return click.option(
        "--wide",
        is_flag=True,
        help="Show every column at full width (default: fit the terminal's width or COLUMNS, wrapping long cells).",
    )(fn)


def fit(wide: bool) -> int:
    """The width a table is laid out in: the terminal's (COLUMNS when set, 80 when neither says), or unbounded with
    --wide."""
    return WIDE if wide else Console().width


def natural_width(columns: Sequence[str], rows: Iterable[Sequence[Any]], compact: bool = False) -> int:
    """Columns the table needs to show every cell whole, its title aside: a command may show more where they fit."""
    return Console(width=WIDE).measure(_table(None, columns, rows, compact)).maximum


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    width: int | None = None,
    compact: bool = False,
    fold: bool = False,
) -> None:
    """Prints a table to stdout, colouring status words; `width` fixes the layout (else the terminal's, or 200);
    `compact` draws only the header rule, leaving the columns their text; `fold` breaks a cell too long for its
    column onto more lines instead of cutting it (numbers a narrow terminal must still show whole)."""
    console = Console(width=width)
    if not console.is_terminal and width is None:
        console = Console(width=int(os.environ.get("COLUMNS") or 200))
    console.print(_table(title, columns, rows, compact, fold))


REASON_CHARS = 600
"""Most of one reason printed beneath a table; the rest is in `--json` and the ledger."""


def beneath(reasons: Iterable[tuple[str, str]], more: str) -> None:
    """Each row's reason beneath its table, whole lines wrapped to the width (a reason column squeezed to a few
    characters at 80 columns says nothing); one longer than REASON_CHARS is cut where `more` says to look."""
    width = Console().width if sys.stdout.isatty() else int(os.environ.get("COLUMNS") or 200)
    for key, reason in reasons:
        if not reason:
            continue
        if len(reason) > REASON_CHARS:
            reason = reason[:REASON_CHARS].rstrip() + f"... ({len(reason)} characters; {more or '--json'})"
        lead = f"{key}: "
        click.echo(textwrap.fill(reason, max(width, 40), initial_indent=lead, subsequent_indent=" " * len(lead)))


def _table(
    title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], compact: bool, fold: bool = False
) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold", **({"box": box.SIMPLE_HEAD} if compact else {}))
    for c in columns:
        t.add_column(c, overflow="fold" if fold else "ellipsis")
    for row in rows:
        t.add_row(*(_cell(v) for v in row))
    return t


def stderr_is_tty() -> bool:
    """Progress lines go to stderr only for a person watching; logs and pipes stay quiet."""
    return sys.stderr.isatty()


STATUS_EXIT = {
    Status.PASS: ExitCode.OK,
    Status.FAIL: ExitCode.FAIL,
    Status.N_A: ExitCode.NOT_APPLICABLE,
    Status.NO_DECISION: ExitCode.NO_DECISION,
}


def exit_with(status: Status | str) -> None:
    """Ends the command with the exit code of a verdict (the table in hotfloat.errors.ExitCode)."""
    sys.exit(int(STATUS_EXIT[Status(status)]))


def _cell(v: Any) -> str:
    s = "" if v is None else str(v)
    style = STATUS_STYLE.get(s)
    return f"[{style}]{s}[/]" if style else s.replace("[", r"\[")


def progress() -> Progress | StepLines:
    """A progress bar on stderr; where stderr is not a terminal (a log, a CI job), one timestamped line per step."""
    console = Console(file=sys.stderr)
    if not console.is_terminal:
        return StepLines()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


class StepLines:
    """The progress bar's calls as log lines: each new step's description once, with the seconds since the start, so a run
    cut short by a time limit still says how far it got and where its time went."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.said: dict[int, str] = {}

    def __enter__(self) -> StepLines:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None) -> int:
        task = len(self.said)
        self.said[task] = description  # the task's name: said once work under it starts, so an error stays one line
        return task

    def update(self, task: int, *, description: str | None = None, **_: object) -> None:
        if description is not None and description != self.said[task]:
            self.said[task] = description
            print(f"[{time.monotonic() - self.t0:7.1f} s] {description}", file=sys.stderr, flush=True)

    def advance(self, task: int, advance: float = 1) -> None:
        return None
