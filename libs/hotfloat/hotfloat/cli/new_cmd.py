"""`hotfloat new`: start a bundle for one slot from a template that already passes scan and verify."""

import click

from .output import emit_json, json_option


def complete_slot(ctx, param, incomplete: str) -> list[str]:
    """TAB completion of slot names (the registry imports no torch, so completion stays instant)."""
    from ..slots import SLOTS

    return [name for name in SLOTS if name.startswith(incomplete)]


@click.command("new")
@click.argument("directory", type=click.Path(file_okay=False, path_type=str))
@click.option(
    "--slot",
    required=True,
    metavar="SLOT",
    help="The slot to implement (see `hotfloat slots`).",
    shell_complete=complete_slot,
)
@click.option("--id", "bundle_id", default=None, help="bundle_id for the manifest (default: DIRECTORY's name).")
@json_option
def new(directory: str, slot: str, bundle_id: str | None, as_json: bool) -> None:
    """Write a new bundle into DIRECTORY: manifest, a plain-torch kernel with the slot's exact signature, metadata
    and a README; it passes `hotfloat scan` and `hotfloat verify` as written."""
    from ..authoring.template import verify_command, write_template

    written = write_template(directory, slot, bundle_id)
    if as_json:
        emit_json({"directory": directory, "slot": slot, "files": [str(p) for p in written]})
        return
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"next: {verify_command(slot, directory)}")
