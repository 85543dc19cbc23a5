"""Shared output: `--json` for machines, rich tables for people on stdout, progress on stderr only for a TTY."""

from __future__ import annotations

import json
import os
import sys
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


def progress() -> Progress:
    """A progress bar on stderr that stays silent when stderr is not a terminal."""
    console = Console(file=sys.stderr)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    )
