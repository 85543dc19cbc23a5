"""`hotfloat hash`: a bundle's canonical identity, the value a miner commits."""

import click

from ..bundle import load_bundle
from .output import emit_json, json_option


@click.command("hash")
@click.argument("bundle", type=click.Path(file_okay=False, path_type=str))
@json_option
def hash_cmd(bundle: str, as_json: bool) -> None:
    """Print the canonical SHA-256 identity of BUNDLE."""
    b = load_bundle(bundle)
    if as_json:
        emit_json({"bundle_id": b.manifest.bundle_id, "identity": b.identity, "files": len(b.files)})
    else:
        click.echo(b.identity)
