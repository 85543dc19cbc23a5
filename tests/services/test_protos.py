"""The generated stubs are build outputs: they must match what the generator makes from the protos now."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import hotfloat_services._proto as stubs

REPO = Path(__file__).resolve().parents[2]


def test_installed_stubs_are_fresh(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run([str(REPO / "tools" / "gen_protos.sh"), str(tmp_path)], check=True, env=env)
    installed = Path(stubs.__file__).parent
    fresh = sorted(p.name for p in tmp_path.iterdir())
    assert fresh == sorted(p.name for p in installed.iterdir() if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, installed, fresh, shallow=False)
    assert not mismatch and not errors, f"stale stubs {mismatch or errors}: run `make setup`"


def test_stubs_import_each_other_relatively():
    text = (Path(stubs.__file__).parent / "admission_pb2.py").read_text()
    assert "from hotfloat.v1" not in text and "from . import common_pb2" in text
