"""Entry point: the command registry and the one place where errors become exit codes."""

from __future__ import annotations

import os
import sys

import click

from ..errors import ExitCode, HotfloatError
from .bench_cmd import bench
from .build_cmd import admit_cmd, build
from .bundle_cmd import bundle, hash_cmd
from .compat_cmd import chain_compat, compat
from .demo_cmd import demo
from .chain_cmd import chain
from .env_cmd import env
from .image_cmd import image
from .new_cmd import new
from .preflight_cmd import preflight_cmd
from .scan_cmd import scan
from .serve_cmd import serve
from .qualify_cmd import qualify
from .slots_cmd import slots
from .validator_cmd import validator
from .verify_cmd import verify


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="hotfloat")
def cli() -> None:
    """hotfloat: check, verify, benchmark and qualify GPU-kernel bundles for a serving engine's slots.

    Exit codes (every command): 0 ok/PASS, 1 FAIL, 2 bad input or usage, 3 infrastructure, 4 nothing applicable,
    5 NO_DECISION. Shell completion: eval "$(_HOTFLOAT_COMPLETE=bash_source hotfloat)" (zsh_source, fish_source)."""


COMMANDS = (
    new,
    bundle,
    build,
    admit_cmd,
    bench,
    slots,
    demo,
    hash_cmd,
    scan,
    env,
    image,
    preflight_cmd,
    chain,
    validator,
    serve,
    qualify,
    verify,
    compat,
    chain_compat,
)
for command in COMMANDS:
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Runs the CLI; a HotfloatError becomes one `error:` line and its exit code, never a traceback."""
    try:
        cli.main(args=argv, prog_name="hotfloat", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:  # click's own usage and parameter errors: one line, like every other error
        click.echo(f"error: {_one_line(e)}", err=True)
        sys.exit(ExitCode.USAGE)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except HotfloatError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(int(e.exit_code))
    except Exception as e:  # an internal fault: one line for users, the traceback on demand
        if os.environ.get("HOTFLOAT_DEBUG"):
            raise
        click.echo(f"error: internal: {type(e).__name__}: {e} (set HOTFLOAT_DEBUG=1 for the traceback)", err=True)
        sys.exit(ExitCode.INFRASTRUCTURE)
    sys.exit(ExitCode.OK)


def _one_line(e: click.ClickException) -> str:
    """Click's message on one line, with the command whose --help explains the usage."""
    message = " ".join(e.format_message().split())
    ctx = getattr(e, "ctx", None)
    return f"{message} (see `{ctx.command_path} --help`)" if ctx is not None else message
