"""The two set-up commands (`make demo`, `make test`) say what they build and install nothing into the system Python:
what make would run is read from `make -n` (a dry run), not from the Makefile's text."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def dry_run(*targets: str) -> list[str]:
    """Every command `make` would run for `targets` from scratch (-B: as on a fresh clone), none of them run."""
    done = subprocess.run(["make", "-n", "-B", *targets], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_nothing_is_pip_installed_into_the_system_python_and_uv_is_pinned_by_hash():
    lines = dry_run("test", "lock", "engine-lock")
    installs = [line.split() for line in lines if re.search(r"\bpip install\b", line)]
    program = [next(w for w in words if "=" not in w) for words in installs]  # past VAR=value prefixes
    assert installs and set(program) == {".venv/bin/pip", ".venv/bin/uv"}, installs
    assert all(words[words.index("--python") + 1].startswith(".venv-engine/") for words in installs if "uv" in words[0])
    assert any(" ".join(words).endswith("--require-hashes --no-deps -r engine/uv.lock") for words in installs)
    assert re.search(r"^uv==[\d.]+ \\$", (ROOT / "engine" / "uv.lock").read_text(), re.M)


def test_the_readme_keeps_two_set_up_commands_and_says_what_make_test_builds():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    assert [line.split()[:2] for line in block.splitlines() if line.startswith("    ")] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    flat = " ".join(block.split())
    assert all(s in flat for s in (".venv-engine", "about 5 GB", "images through Bazel", "about 10 GB in all"))
    assert "Bazel server stops when the tests end" in flat


def test_make_test_runs_the_timed_tests_alone_after_the_parallel_part():
    """A test whose verdict depends on this machine's speed never shares the CPU with another test."""
    runs = [line for line in dry_run("test") if "-m pytest" in line]
    assert len(runs) == 2 and '-m "not timed"' in runs[0] and "-n " in runs[0]
    assert runs[1].split()[-3:] == ["-m", "timed", "tests"] and "-n " not in runs[1]
    ini = (ROOT / "pytest.ini").read_text()
    assert "timed:" in ini
