"""Every command has help text, and the CLI turns bad input into one error line and an exit code."""

import subprocess
import sys

import click
from click.testing import CliRunner
import pytest

from hotfloat.cli.main import COMMANDS as COMMAND_HELP, cli


def walk(group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from walk(cmd, (*prefix, name))


COMMANDS = list(walk(cli))


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help(path, cmd):
    assert (cmd.help or "").strip(), f"hotfloat {' '.join(path)} has no help text"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output


def test_the_listed_short_help_is_each_commands_own():
    ctx = click.Context(cli)
    for name, (_, short) in COMMAND_HELP.items():
        assert short == cli.get_command(ctx, name).get_short_help_str(10_000), name


def run(*args):
    return subprocess.run([sys.executable, "-m", "hotfloat.cli", *args], capture_output=True, text=True, timeout=120)


def test_bad_bundle_is_one_line_exit_2(make_bundle):
    root = make_bundle(files={"kernels/lib.so": b"\x7fELF"})
    for command in ("hash", "scan"):
        p = run(command, str(root))
        assert p.returncode == 2
        assert p.stderr.strip().count("\n") == 0 and p.stderr.startswith("error: "), p.stderr
        assert "Traceback" not in p.stderr


def test_hash_prints_identity(make_bundle):
    from hotfloat.bundle import load_bundle

    root = make_bundle()
    p = run("hash", str(root))
    assert p.returncode == 0 and p.stdout.strip() == load_bundle(root).identity


def test_slots_json_lists_registered_slots():
    import json

    p = run("slots", "--json")
    assert p.returncode == 0
    names = {s["name"] for s in json.loads(p.stdout)}
    assert {"activation.silu_and_mul", "norm.rmsnorm", "norm.fused_add_rmsnorm"} <= names


def test_unknown_command_exit_2():
    p = run("no-such-command")
    assert p.returncode == 2 and "Traceback" not in p.stderr
