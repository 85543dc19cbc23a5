"""`hotfloat scan`: the static policy verdict per op, without importing the bundle."""

import click

from ..errors import ExitCode
from .options import bundle_argument, open_bundle
from .output import emit_json, json_option


@click.command("scan")
@bundle_argument
@json_option
def scan(bundle: str, as_json: bool) -> None:
    """Check BUNDLE's code against the import/builtin/introspection policy. Exit 0 clean, 1 findings."""
    from ..scan import scan_bundle

    report = scan_bundle(open_bundle(bundle))
    if as_json:
        emit_json(report.model_dump() | {"clean": report.clean})
    else:
        click.echo(f"bundle {report.bundle_id}  identity {report.identity}")
        for op in report.ops:
            click.echo(f"  {op.op:<40} [{'clean' if op.clean else 'VIOLATIONS'}]")
            for f in op.findings:
                click.echo(f"      {f}")
    raise SystemExit(ExitCode.OK if report.clean else ExitCode.FAIL)
