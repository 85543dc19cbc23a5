"""Option bundles shared by commands: a bundle given as a directory or an archive, `--device auto`, the ledger path.

Nothing here imports torch: `--help`, `slots`, `hash` and `validator status` must start in well under a second."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..errors import InputError

DEVICES = ("auto", "cpu", "cuda")


def bundle_argument(fn):
    """BUNDLE: a bundle directory or a .tar.gz archive of one (as `chain package` writes)."""
    return click.argument("bundle", type=click.Path(path_type=str), metavar="BUNDLE")(fn)


def open_bundle(path: str):
    """Loads a bundle from a directory or an archive, refusing anything else with one clear line; what the load left
    out is named in one note on stderr, for a folder and an archive alike (the author can see what was left out)."""
    from ..bundle import load_bundle, unpack

    if not Path(path).is_dir():
        return note_ignored(unpack(read_archive(path)), path)
    return note_ignored(load_bundle(path), path)


def note_ignored(bundle, path: str):
    """Names what a bundle's load (folder or archive) left out, in one stderr line (none when nothing was); returns
    `bundle`."""
    if bundle.ignored:
        click.echo(f"note: ignored {' '.join(bundle.ignored)} in {path} (never hashed, shipped or scanned)", err=True)
    return bundle


def read_archive(path: str | os.PathLike) -> bytes:
    """A bundle archive's bytes, read no further than the archive bound (`unpack` refuses anything larger)."""
    from ..bundle.archive import MAX_ARCHIVE_BYTES

    if not Path(path).is_file():
        raise InputError(f"{path}: no such bundle directory or archive")
    if Path(path).name == "manifest.toml":
        raise InputError(f"{path} is a bundle's manifest; give the bundle directory instead: {Path(path).parent}")
    return read_input(path, MAX_ARCHIVE_BYTES, "archive")


def read_input(path: str | os.PathLike, limit: int, what: str) -> bytes:
    """An input file's bytes (`bounded.read_file`), any refusal one InputError naming the file."""
    from ..bundle.bounded import read_file

    try:
        return read_file(path, limit)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise InputError(f"{path}: {what}: {e}") from None


def device_option(help_text: str):
    """--device auto|cpu|cuda, default auto: cuda when a GPU is visible, else cpu."""
    return click.option(
        "--device",
        type=click.Choice(DEVICES),
        default="auto",
        show_default=True,
        help=f"{help_text} auto = cuda when a GPU is visible, else cpu.",
    )


def seed_option(draws: str, *, fixed: bool = False):
    """--seed, the workload seed: the one meaning "seed" has on the command line. A command that judges draws a fresh
    secret one and keeps it in its report, so a run can be replayed and a kernel cannot be tuned to it; `bench`, which
    measures for the author, fixes it at 0 so two runs time the same inputs (docs/kernel-authors.md, "Seeds")."""
    why = (
        "0: every run the same, so runs compare"
        if fixed
        else "a fresh secret one, kept in the report; give it to replay a run"
    )
    return click.option(
        "--seed",
        type=int,
        metavar="N",
        default=0 if fixed else None,
        callback=_seed_in_range,
        help=f"Workload seed: {draws} [default: {why}].",
    )


def _seed_in_range(ctx, param, value: int | None) -> int | None:
    """Every seed fits the 63 bits the generators and the wire take."""
    if value is not None and not 0 <= value < 1 << 63:
        raise click.BadParameter(f"{value} is not in 0 .. 2**63-1")
    return value


def default_ledger() -> str:
    """$HOTFLOAT_LEDGER, else $XDG_DATA_HOME/hotfloat/ledger.db (~/.local/share/hotfloat/ledger.db): per user, never
    whatever directory the command happens to run in."""
    if os.environ.get("HOTFLOAT_LEDGER"):
        return os.environ["HOTFLOAT_LEDGER"]
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(data) / "hotfloat" / "ledger.db")


def ledger_option(help_text: str = "The validator's SQLite ledger (created if missing)."):
    """--ledger PATH, defaulting to the per-user ledger."""
    return click.option(
        "--ledger",
        "ledger_path",
        type=click.Path(dir_okay=False),
        default=default_ledger,
        show_default="$HOTFLOAT_LEDGER or $XDG_DATA_HOME/hotfloat/ledger.db",
        help=help_text,
    )


def writable_ledger(path: str) -> str:
    """Creates the ledger's folder for commands that write it (the per-user folder may not exist yet)."""
    parent = Path(path).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--ledger {path}: cannot create {parent}: {e.strerror}") from None
    return path


def scanned(bundle, path: str):
    """`bundle` when scan finds nothing; ScanRefused with scan's first line otherwise (exit 1, as `scan` exits)."""
    from ..errors import ScanRefused
    from ..scan import scan_bundle

    findings = [f for op in scan_bundle(bundle).ops for f in op.findings]
    if findings:
        more = f" (and {len(findings) - 1} more: hotfloat scan {path})" if len(findings) > 1 else ""
        raise ScanRefused(f"scan refuses {path}: {findings[0]}{more}")
    return bundle
