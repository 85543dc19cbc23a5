"""Entry point: the command registry and the one place where errors become exit codes."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap

import click

from ..errors import ExitCode, HotfloatError

COMMANDS: dict[str, tuple[str, str]] = {
    "new": (
        "new_cmd:new",
        "Write a new bundle into DIRECTORY: manifest, a plain-torch kernel per slot with the slot's exact "
        "signature, metadata and a README; it passes `hotfloat scan` and `hotfloat verify` as written.",
    ),
    "bundle": ("bundle_cmd:bundle", "The bundle format: its JSON Schema, and importing bundles written for Cacheon."),
    "build": (
        "build_cmd:build",
        "Scan BUNDLE, then compile its triton/cute kernels to cubins without a GPU, in a sandbox; exit 0 PASS, 1 FAIL.",
    ),
    "admit": (
        "build_cmd:admit_cmd",
        "Verify BUNDLE's ops, then gate, load (Driver API) and verify its built cubins, as "
        "the admission service does; without a GPU the verdict says the load was skipped.",
    ),
    "bench": (
        "bench_cmd:bench",
        "Time BUNDLE's kernels on each slot's shapes beside the stock kernels, checking outputs before and after.",
    ),
    "slots": (
        "slots_cmd:slots",
        "List the registered slots: the call your entry receives (arguments in order), what "
        "it must write, dtypes, verification shapes and tolerances.",
    ),
    "demo": (
        "demo_cmd:demo",
        "Run the arena on CPU: five miners commit digests and reveal bundles on a stand-in chain (one honest, one "
        "broken, two cheating, one copying the honest one), and the validator takes them in (refusing the copy) and "
        "runs scan, build, verify, qualification on the CPU engine, settlement, crowns and weights; each miner reads "
        "its signed report; then a summary.",
    ),
    "hash": (
        "bundle_cmd:hash_cmd",
        "Print the canonical SHA-256 identity of BUNDLE (the value a miner commits); exit 1 with scan's line when "
        "scan refuses it.",
    ),
    "scan": ("scan_cmd:scan", "Check BUNDLE's code against the import/builtin/introspection policy."),
    "env": (
        "env_cmd:env",
        "Show this host's environment identity (GPU, driver, CUDA, Torch, Triton, SGLang, image, revision).",
    ),
    "image": ("image_cmd:image", "Build, inspect, check and run the compiler, worker and validator images."),
    "preflight": (
        "preflight_cmd:preflight_cmd",
        "Check this host before trusting it: exit 1 naming each question (device, static, behavioral) that failed.",
    ),
    "chain": ("chain_cmd:chain", "Miner commitments, validator intake and weights on the Bittensor chain."),
    "validator": (
        "validator_cmd:validator",
        "Queue submissions and move them through compile, admission, qualification and scoring.",
    ),
    "serve": ("serve_cmd:serve", "Serve NAME until SIGTERM; prints the address it listens on once it is ready."),
    "qualify": (
        "qualify_cmd:qualify",
        "Qualify a bundle on the complete engine (B C B' in fresh processes): `hotfloat qualify BUNDLE`.",
    ),
    "verify": (
        "verify_cmd:verify",
        "Verify BUNDLE's ops: exit 0 all applicable pass, 1 any FAIL, 4 nothing applicable, 3 infrastructure error.",
    ),
    "compat": (
        "compat_cmd:compat",
        "Check the installed SGLang against the pin and every seam hotfloat hooks (exit 1 on any FAIL).",
    ),
    "chain-compat": (
        "compat_cmd:chain_compat",
        "Check the installed Bittensor SDK against the pin and the calls the chain layer makes; no network.",
    ),
}
"""Command name -> (module:object, short help). Click's lazy-group pattern: a command's module is imported only when
that command runs, so `hotfloat --help` imports none of them (the short help is kept here; a test holds it equal to
each command's own)."""


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use and listed in --help from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name][0].split(":")
        return getattr(importlib.import_module(f"{__package__}.{module}"), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [
            (name, textwrap.shorten(COMMANDS[name][1], limit, placeholder="...")) for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="hotfloat")
def cli() -> None:
    """hotfloat: check, verify, benchmark and qualify GPU-kernel bundles for a serving engine's slots.

    Exit codes (every command): 0 ok/PASS, 1 FAIL, 2 bad input or usage, 3 infrastructure, 4 nothing applicable,
    5 NO_DECISION. Shell completion: eval "$(_HOTFLOAT_COMPLETE=bash_source hotfloat)" (zsh_source, fish_source)."""


class ReaderGone:
    """stdout that, once its reader has gone (`hotfloat slots | head -1`), sends the rest to /dev/null: the command
    finishes and exits with its own code (a verify that FAILs still exits 1), not click's 1 for a broken pipe."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._to_null()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._to_null()

    def _to_null(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.stream.fileno())
        os.close(null)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def main(argv: list[str] | None = None) -> None:
    """Runs the CLI; a HotfloatError becomes one `error:` line and its exit code, never a traceback."""
    if sys.stdout is sys.__stdout__ and sys.stdout is not None:
        sys.stdout = ReaderGone(sys.stdout)
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
