"""`hotfloat verify` as a user runs it: its table or JSON, and its exit codes (children are always real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotfloat.cli.main import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def _main(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def test_silu_triton_passes_end_to_end_on_cpu():
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "verify", str(EXAMPLES / "silu_triton"), "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    elapsed = time.monotonic() - started
    print(f"hotfloat verify examples/silu_triton --device cpu: {elapsed:.1f}s")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS in" in r.stdout and "seed=" in r.stdout and "sandbox=" in r.stdout
    assert "FAIL" not in r.stdout


def test_json_report_and_exit_1_for_a_failing_bundle(capsys):
    code, out, _ = _main(
        capsys, "verify", str(EXAMPLES / "silu_broken"), "--json", "--dtype", "fp16", "--seed", "5", "--trials", "3"
    )
    assert code == 1
    report = json.loads(out)
    assert report["status"] == "FAIL" and report["seed"] == 5 and report["sandboxed"] is True
    assert {row["status"] for row in report["rows"]} == {"FAIL"}
    assert all(row["dtype"] == "fp16" and row["trials"] == 3 for row in report["rows"])


def test_nothing_applicable_exits_4(capsys, make_bundle):
    gpu_only = make_bundle(
        manifest='bundle_id = "g"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\n'
        'slot = "activation.silu_and_mul"\nsource = "kernels/k.py"\nentry = "run"\n'
        'architectures = ["sm_90"]\n'
    )
    code, out, _ = _main(capsys, "verify", str(gpu_only))
    assert code == 4 and "N/A" in out and "not built for cpu" in out


def test_bad_bundle_is_one_error_line_and_exit_2(capsys, tmp_path):
    (tmp_path / "manifest.toml").write_text("bundle_id = 'x'\n")
    code, _, err = _main(capsys, "verify", str(tmp_path))
    assert code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_help_names_the_exit_codes(capsys):
    code, out, _ = _main(capsys, "verify", "--help")
    assert code == 0 and "--unsandboxed" in out and "exit 0" in out and "--seed" in out
