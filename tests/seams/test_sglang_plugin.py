"""Layer-level activation against the real pinned SGLang (engine venv, CPU): the plugin, loaded by SGLang's own
plugin loader, routes SiluAndMul, RMSNorm and RMSNorm with a residual through the armed bundle; exact math is
byte-identical to SGLang's original method, a broken kernel differs, and the counters prove the bundle ran."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from hotfloat.compat import engine_python
from hotfloat.bundle import load_bundle

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"


def _bad_bundle(root: Path) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "manifest.toml").write_text((FIXTURES / "silu_exact/manifest.toml").read_text())
    (root / "kernels/silu.py").write_text("raise ImportError('candidate refuses to import')\n")
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Starts the three engine-venv processes at once (each pays SGLang's import time), then collects them."""
    python = engine_python()
    assert Path(python).exists(), f"{python} missing: `make engine` builds the engine venv (make test does)"
    bad = _bad_bundle(tmp_path_factory.mktemp("bad"))
    load_only = "from sglang.srt.plugins import load_plugins; load_plugins(); print('served stock')"
    cases = {
        "engine_exact": (FIXTURES / "engine_exact", [str(HERE / "sglang_layers.py")]),
        "silu_broken": (FIXTURES / "silu_broken", [str(HERE / "sglang_layers.py")]),
        "fused_broken": (FIXTURES / "fused_broken", [str(HERE / "sglang_layers.py")]),
        "load_fails": (bad, ["-c", load_only]),
    }
    procs = {}
    for name, (bundle, args) in cases.items():
        env = {
            **os.environ,
            "HOTFLOAT_SEAMS": "1",
            "SGLANG_PLUGINS": "hotfloat",
            "HOTFLOAT_ARMED_BUNDLE": str(bundle),
            "PYTHONWARNINGS": "ignore",
        }
        procs[name] = subprocess.Popen(
            [python, *args], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    out = {}
    for name, p in procs.items():
        stdout, stderr = p.communicate(timeout=540)
        if name == "load_fails":
            out[name] = (p.returncode, stdout, stderr)
            continue
        assert p.returncode == 0, stderr[-2000:]
        out[name] = json.loads(stdout.strip().splitlines()[-1])
    return out


def test_exact_bundle_is_byte_identical_and_routed(runs):
    r = runs["engine_exact"]
    assert r["identity"] == load_bundle(FIXTURES / "engine_exact").identity
    assert r["silu"][0] == r["silu"][1]
    assert r["norm"][0] == r["norm"][1]
    assert r["counts"]["activation.silu_and_mul"] == [1, 0]
    assert r["counts"]["norm.rmsnorm"] == [1, 0]
    for case in ("norm_residual", "norm_residual_bf16"):
        hooked, original, untouched = r[case]
        assert hooked == original and untouched, case
    assert r["counts"]["norm.fused_add_rmsnorm"] == [2, 0]


def test_broken_bundle_changes_the_layer_output(runs):
    r = runs["silu_broken"]
    assert r["silu"][0] != r["silu"][1]
    assert r["counts"]["activation.silu_and_mul"] == [1, 0]
    assert r["norm"][0] == r["norm"][1] and r["counts"]["norm.rmsnorm"] == [0, 1]


def test_broken_fused_bundle_changes_the_residual_norm_output(runs):
    r = runs["fused_broken"]
    assert r["norm_residual"][0] != r["norm_residual"][1] and r["norm_residual"][2]
    assert r["counts"]["norm.fused_add_rmsnorm"] == [2, 0]
    assert r["silu"][0] == r["silu"][1] and r["counts"]["activation.silu_and_mul"] == [0, 1]


def test_residual_norm_without_an_armed_op_stays_stock_and_identical(runs):
    r = runs["silu_broken"]
    for case in ("norm_residual", "norm_residual_bf16"):
        assert r[case][0] == r[case][1], case
    assert r["counts"]["norm.fused_add_rmsnorm"] == [0, 2]


def test_a_bundle_that_fails_to_load_aborts_the_process(runs):
    returncode, stdout, stderr = runs["load_fails"]
    assert returncode != 0 and "served stock" not in stdout
    assert "importing kernels/silu.py failed: ImportError" in stderr
    assert "candidate refuses to import" not in stderr  # its message is candidate text the loader never formats
