"""The CLI: --help, --json, [ok]/[FAIL] rows and exit codes, run as a real subprocess."""

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from hotfloat.cli.compat_cmd import chain_compat, compat
from hotfloat.compat import SGLANG_PIN


def run(*args, env=None):
    code = "from hotfloat.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_help_on_both_commands():
    for cmd in (compat, chain_compat):
        done = CliRunner().invoke(cmd, ["--help"])
        assert done.exit_code == 0 and "--json" in done.output and "--python" in done.output


def test_chain_compat_json_passes():
    done = run("chain-compat", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "PASS" and report["target"] == "bittensor" and len(report["rows"]) > 10


def test_a_pin_mismatch_prints_fail_rows_and_exits_nonzero(tmp_path):
    pkg = tmp_path / "sglang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (tmp_path / "sglang-0.5.22.dist-info").mkdir()
    (tmp_path / "sglang-0.5.22.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.22\n"
    )
    done = run("compat", "--python", sys.executable, env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 1
    assert "[FAIL]" in done.stdout and f"0.5.22 DIFFERS from pin {SGLANG_PIN}" in done.stdout
    assert done.stderr.startswith("error: sglang compat failed: sglang version")


def test_a_missing_engine_interpreter_is_one_error_line(tmp_path):
    done = run("compat", "--python", str(tmp_path / "nope"))
    assert done.returncode == 3 and done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert "Traceback" not in done.stderr
