"""`hotfloat new`: start a bundle for one or several slots from a template that already passes scan and verify."""

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
    "slots",
    required=True,
    multiple=True,
    metavar="SLOT",
    help="A slot to implement (see `hotfloat slots`); repeat it for a bundle with an op per slot.",
    shell_complete=complete_slot,
)
@click.option("--id", "bundle_id", default=None, help="bundle_id for the manifest (default: DIRECTORY's name).")
@json_option
def new(directory: str, slots: tuple[str, ...], bundle_id: str | None, as_json: bool) -> None:
    """Write a new bundle into DIRECTORY: manifest, a plain-torch kernel per slot with the slot's exact signature,
    metadata and a README; it passes `hotfloat scan` and `hotfloat verify` as written."""
    from ..authoring.template import verify_commands, write_template

    written = write_template(directory, list(slots), bundle_id)
    if as_json:
        emit_json({"directory": directory, "slots": list(slots), "files": [str(p) for p in written]})
        return
    for path in written:
        click.echo(f"wrote {path}")
    for line in verify_commands(list(slots), directory):
        click.echo(f"next: {line}")
