"""One exit-code table for every command (hotfloat.errors.ExitCode), each code reached by a real command, and the
table printed in `hotfloat --help` and docs/kernel-authors.md."""

import re
import subprocess
import sys

import pytest

from hotfloat.devices import gpu_name
from hotfloat.errors import ExitCode

from ..conftest import EXAMPLES, REPO

GPU_ONLY = (
    'bundle_id = "g"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    'source = "kernels/k.py"\nentry = "run"\narchitectures = ["sm_90"]\n'
)


def hotfloat(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_codes_are_distinct():
    assert len({int(c) for c in ExitCode}) == len(ExitCode)
    assert [
        ExitCode.OK,
        ExitCode.FAIL,
        ExitCode.USAGE,
        ExitCode.INFRASTRUCTURE,
        ExitCode.NOT_APPLICABLE,
        ExitCode.NO_DECISION,
    ] == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("case", ["ok", "fail", "usage", "bad-input", "infrastructure", "not-applicable"])
def test_each_outcome_has_its_code(case, make_bundle, tmp_path):
    if case == "ok":
        p, want = hotfloat("scan", EXAMPLES / "silu_torch"), ExitCode.OK
    elif case == "fail":
        p, want = hotfloat("scan", EXAMPLES / "silu_banned_import"), ExitCode.FAIL
    elif case == "usage":
        p, want = hotfloat("verify", EXAMPLES / "silu_torch", "--trials", "0"), ExitCode.USAGE
    elif case == "bad-input":
        p, want = hotfloat("hash", make_bundle(files={"kernels/lib.so": b"\x7fELF"})), ExitCode.USAGE
    elif case == "infrastructure":
        p, want = (
            hotfloat("chain", "status", "--netuid", "1", "--network", f"standin:{tmp_path}/none.json"),
            ExitCode.INFRASTRUCTURE,
        )
    else:
        p, want = hotfloat("verify", make_bundle(manifest=GPU_ONLY), "--device", "cpu"), ExitCode.NOT_APPLICABLE
    assert p.returncode == want, p.stdout + p.stderr
    assert "Traceback" not in p.stderr


def test_table_is_documented_in_help_and_docs():
    p = hotfloat("--help")
    assert p.returncode == 0
    help_text = " ".join(p.stdout.split())
    docs = (REPO / "docs" / "kernel-authors.md").read_text()
    for code in ExitCode:
        if code is ExitCode.INTERRUPTED:
            continue
        assert f"{int(code)} " in help_text
        assert re.search(rf"^\| {int(code)} \|", docs, re.M), f"docs/kernel-authors.md lacks exit code {int(code)}"


@pytest.mark.parametrize(
    "argv", [["nosuch"], ["scan", "--bogus", "x"], ["qualify", "run"], ["validator", "status", "99999999999999999999"]]
)
def test_usage_errors_are_one_line_naming_the_help_to_read(argv):
    p = subprocess.run([sys.executable, "-m", "hotfloat.cli", *argv], capture_output=True, text=True, timeout=60)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == ExitCode.USAGE and len(lines) == 1, p.stderr
    assert lines[0].startswith("error: ") and "--help`)" in lines[0]


@pytest.mark.parametrize("argv,code", [(["slots"], ExitCode.OK), (["scan", EXAMPLES / "silu_torch", "--json"], None)])
def test_a_reader_that_stops_early_leaves_the_commands_own_exit_code(argv, code):
    """`hotfloat slots | head -1`: the reader closes the pipe before the command writes; the command still exits with
    the code it would have (click's broken-pipe 1 reads as FAIL), and says nothing about the pipe."""
    code = code if code is not None else hotfloat(*argv).returncode
    p = subprocess.Popen(
        [sys.executable, "-m", "hotfloat.cli", *map(str, argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    p.stdout.close()
    _, err = p.communicate(timeout=300)
    assert p.returncode == code and b"Broken pipe" not in err and b"error" not in err, (p.returncode, err)


@pytest.mark.skipif(gpu_name() is not None, reason="a GPU is visible here")
@pytest.mark.parametrize(
    "argv",
    [
        ["verify", EXAMPLES / "silu_triton"],
        ["bench", EXAMPLES / "silu_triton"],
        ["verify", EXAMPLES / "allreduce_torch", "--world-size", "2"],
        ["qualify", "run", EXAMPLES / "silu_triton"],
    ],
    ids=lambda a: " ".join(map(str, a[:1] + a[2:])),
)
def test_every_command_says_a_missing_gpu_in_the_same_words(argv):
    p = hotfloat(*argv, "--device", "cuda")
    command = " ".join(str(a) for a in argv if not str(a).startswith(str(EXAMPLES)))
    assert p.returncode == ExitCode.INFRASTRUCTURE and p.stderr == (
        f"error: {command} --device cuda: no GPU is visible here; use --device cpu, or run it on a GPU host\n"
    ), p.stderr
