"""`hotfloat scan`: the static policy verdict per op, without importing the bundle."""

import sys

import click

from ..bundle import load_bundle
from ..scan import scan_bundle
from .output import emit_json, json_option


@click.command("scan")
@click.argument("bundle", type=click.Path(file_okay=False, path_type=str))
@json_option
def scan(bundle: str, as_json: bool) -> None:
    """Check BUNDLE's code against the import/builtin/introspection policy. Exit 0 clean, 2 findings."""
    report = scan_bundle(load_bundle(bundle))
    if as_json:
        emit_json(report.model_dump() | {"clean": report.clean})
    else:
        click.echo(f"bundle {report.bundle_id}  identity {report.identity}")
        for op in report.ops:
            click.echo(f"  {op.op:<40} [{'clean' if op.clean else 'VIOLATIONS'}]")
            for f in op.findings:
                click.echo(f"      {f}")
    sys.exit(0 if report.clean else 2)
