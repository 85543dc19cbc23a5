"""`hotfloat demo` judges a folder of bundles end to end and turns every refusal into a row, not a crash."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from hotfloat.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_demo_verdicts(tmp_path):
    for name in ("silu_torch", "silu_broken", "silu_banned_import"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
    (tmp_path / "not_a_bundle").mkdir()
    (tmp_path / "bad_manifest" / "kernels").mkdir(parents=True)
    (tmp_path / "bad_manifest" / "manifest.toml").write_text("bundle_id = [")
    result = CliRunner().invoke(cli, ["demo", str(tmp_path), "--json", "--seed", "7"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {r["bundle"]: r for r in json.loads(result.output)}
    assert set(rows) == {"silu_torch", "silu_broken", "silu_banned_import", "bad_manifest"}
    assert rows["silu_torch"]["verdict"] == "PASS" and rows["silu_torch"]["seed"] == 7
    assert rows["silu_broken"]["verdict"] == "FAIL" and "outside atol" in rows["silu_broken"]["detail"]
    assert rows["silu_banned_import"]["scan"] == "VIOLATIONS" and "socket" in rows["silu_banned_import"]["detail"]
    assert rows["bad_manifest"]["scan"] == "INVALID" and "not valid TOML" in rows["bad_manifest"]["detail"]
