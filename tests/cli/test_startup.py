"""Start-up stays fast: the commands people type most import no torch, triton, grpc or bittensor (issue 22 measured
torch as 7 of 10 seconds), and shell completion answers without them."""

import json
import os
import subprocess
import sys
import time

import pytest

from hotfloat.ledger import Ledger

from ..conftest import EXAMPLES

HEAVY = ("torch", "triton", "grpc", "bittensor")
PROBE = """\
import json, sys
from hotfloat.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(%r))}))
""" % (HEAVY,)


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["slots"],
        ["slots", "--json"],
        ["hash", str(EXAMPLES / "silu_torch")],
        ["scan", str(EXAMPLES / "silu_torch")],
        ["validator", "status", "--ledger", "{db}"],
        ["bundle", "schema"],
        ["verify", "--help"],
        ["bench", "--help"],
        ["chain", "--help"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_light_commands_import_no_heavy_module(argv, tmp_path):
    db = tmp_path / "l.db"
    Ledger(db).close()
    started = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", PROBE, *(a.format(db=db) for a in argv)], capture_output=True, text=True, timeout=120
    )
    print(f"hotfloat {' '.join(argv[:2])}: {time.monotonic() - started:.2f}s")  # the bound is the import list below
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, p.stderr
    assert result["heavy"] == [], f"hotfloat {' '.join(argv)} imported {result['heavy']}"


def complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "_HOTFLOAT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    p = subprocess.run([sys.executable, "-m", "hotfloat.cli"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [line.split(",", 1)[1] for line in p.stdout.splitlines()]


def test_shell_completion_of_commands_and_slot_names():
    assert "slots" in complete("hotfloat sl", 1)
    assert {"schema", "import"} <= set(complete("hotfloat bundle ", 2))
    assert complete("hotfloat new mine --slot norm.", 4) == ["norm.fused_add_rmsnorm", "norm.rmsnorm"]


def test_bash_source_script_names_the_program():
    env = {**os.environ, "_HOTFLOAT_COMPLETE": "bash_source"}
    p = subprocess.run([sys.executable, "-m", "hotfloat.cli"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "_HOTFLOAT_COMPLETE=bash_complete" in p.stdout and "complete " in p.stdout


def test_bench_shape_sets_spelled_out_for_help_match_the_library():
    from hotfloat.bench.shapes import SETS
    from hotfloat.cli.bench_cmd import SETS as CLI_SETS

    assert CLI_SETS == SETS


def test_help_starts_fast_and_imports_no_subcommand():
    """Click's lazy group: `--help` imports no command module, so no numpy, pydantic or qualification code either
    (issue 35 measured 0.65 s with every command imported up front; about 0.1 s without)."""
    best = min(_timed([sys.executable, "-m", "hotfloat.cli", "--help"]) for _ in range(5))
    assert best < 1.0, f"hotfloat --help took {best:.2f}s at best of 5"
    p = subprocess.run([sys.executable, "-c", LOADED, "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout.strip().splitlines()[-1])
    assert not {"numpy", "pydantic", "torch", "hotfloat.qualify"} & set(loaded), loaded
    assert [m for m in loaded if m.startswith("hotfloat.cli.")] == ["hotfloat.cli.main"], loaded


LOADED = """\
import json, sys
from hotfloat.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _timed(argv: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(argv, capture_output=True, timeout=120, check=True)
    return time.monotonic() - started
