"""tools/cacheon_examples.sh: every example of a Cacheon checkout imported and verified, one line each, a refused
import named with its reason rather than stopping the run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "cacheon"


def test_each_example_gets_its_line_and_a_refusal_does_not_stop_the_run(tmp_path):
    examples = tmp_path / "checkout" / "examples"
    shutil.copytree(FIXTURES / "silu_setup", examples / "a_silu")
    shutil.copytree(FIXTURES / "silu_setup", examples / "b_override")
    manifest = examples / "b_override" / "manifest.toml"
    text = manifest.read_text()
    manifest.write_text(text.replace("[[ops]]\n", '[[ops]]\nbase_kernel = "k"\noverride_point = "epilogue"\n'))
    hotfloat = tmp_path / "hotfloat"
    hotfloat.write_text(f'#!/bin/sh\nexec {sys.executable} -m hotfloat.cli "$@"\n')
    hotfloat.chmod(0o755)
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "cacheon_examples.sh"), str(tmp_path / "checkout"), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HOTFLOAT": str(hotfloat)},
    )
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[1:-1]}
    assert lines["a_silu"][:4] == ["ok", "exit", "0", "PASS"], done.stdout
    assert lines["b_override"][0] == "refused" and "override" in " ".join(lines["b_override"]), done.stdout
    missing = subprocess.run(
        ["bash", str(ROOT / "tools" / "cacheon_examples.sh"), str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
