"""Shared output: `--json` for machines, rich tables for people on stdout, progress on stderr only for a TTY."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

STATUS_STYLE = {"PASS": "green", "FAIL": "bold red", "NO_DECISION": "yellow", "N/A": "dim", "ok": "green", "FAIL!": "bold red"}


def json_option(fn):
    """Adds --json: print one JSON document instead of a table."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table.")(fn)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Prints a table to stdout, colouring status words."""
    t = Table(title=title, title_justify="left", header_style="bold")
    for c in columns:
        t.add_column(c)
    for row in rows:
        t.add_row(*(_cell(v) for v in row))
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    console.print(t)


def _cell(v: Any) -> str:
    s = "" if v is None else str(v)
    style = STATUS_STYLE.get(s)
    return f"[{style}]{s}[/]" if style else s.replace("[", r"\[")


def progress() -> Progress:
    """A progress bar on stderr that stays silent when stderr is not a terminal."""
    console = Console(file=sys.stderr)
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=not console.is_terminal, transient=True,
    )
