"""Lint guard: the whole tree passes ruff with the rule set in ruff.toml (no per-file exemptions), and is laid out by
`ruff format` (the candidate bundles ruff.toml names aside: they are miners' files, kept byte for byte)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_tree_passes_ruff():
    p = ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_tree_is_formatted():
    p = ruff("format", "--check", "--no-cache", ".")
    assert p.returncode == 0, "run `ruff format .`: " + p.stdout + p.stderr
