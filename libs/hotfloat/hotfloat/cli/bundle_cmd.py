"""`hotfloat hash` and `hotfloat bundle schema|import`: a bundle's identity, its format as JSON Schema, and the
conversion of a Cacheon bundle."""

import shutil
import textwrap

import click

from .options import bundle_argument, open_bundle, scanned
from .output import emit_json, json_option


@click.command("hash")
@bundle_argument
@json_option
def hash_cmd(bundle: str, as_json: bool) -> None:
    """Print the canonical SHA-256 identity of BUNDLE (the value a miner commits); exit 1 with scan's line when scan
    refuses it."""
    b = scanned(open_bundle(bundle), bundle)
    if as_json:
        emit_json({"bundle_id": b.manifest.bundle_id, "identity": b.identity, "files": len(b.files)})
    else:
        click.echo(b.identity)


@click.group("bundle")
def bundle() -> None:
    """The bundle format: its JSON Schema, and importing bundles written for Cacheon."""


@bundle.command("schema")
@click.option(
    "--part",
    type=click.Choice(["all", "manifest", "metadata"]),
    default="all",
    show_default=True,
    help="manifest.toml, metadata/*.json, or both under one document.",
)
def schema_cmd(part: str) -> None:
    """Print the JSON Schema of manifest.toml and metadata/*.json, generated from the models hotfloat validates with."""
    from ..authoring.schema import bundle_schema

    emit_json(bundle_schema(part))


@bundle.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=str))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="Folder for the hotfloat bundle (default: SOURCE's name with a -hotfloat suffix, here).",
)
@json_option
def import_cmd(source: str, out_dir: str | None, as_json: bool) -> None:
    """Convert a Cacheon bundle (folder or archive) into a hotfloat bundle and print every change made."""
    from ..authoring.cacheon import import_cacheon

    result = import_cacheon(source, out_dir)
    if as_json:
        emit_json(result.model_dump(mode="json"))
        return
    width = min(shutil.get_terminal_size((100, 24)).columns, 120)
    click.echo(f"imported {source} -> {result.out_dir} (identity {result.identity[:16]})")
    for c in result.changes:  # one wrapped line per change: every word survives an 80-column terminal
        now = c.now if c.now.startswith("(") else f"-> {c.now}"
        click.echo(
            textwrap.fill(f"{c.file}: {c.field}: {c.was} {now}", width, initial_indent="  ", subsequent_indent="      ")
        )
    for warning in result.warnings:
        click.echo(textwrap.fill(f"warning: {warning}", width, subsequent_indent="  "), err=True)
    ranks = f" --world-size {result.world_size}" if result.world_size > 1 else ""
    click.echo(
        f"{len(result.changes)} changes; next: hotfloat scan {result.out_dir} && hotfloat verify {result.out_dir}{ranks}"
    )
