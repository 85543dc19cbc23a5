"""Bazel works offline on this tree: a real (small) build on the venv toolchain, and one test target per area."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bazel(*args: str) -> subprocess.CompletedProcess:
    subprocess.run(["tools/image_deps.sh"], cwd=REPO, check=True)
    return subprocess.run(["bazel", *args], cwd=REPO, capture_output=True, text=True, timeout=900, check=False)


def test_a_small_build_runs_on_the_project_venv():
    done = _bazel("build", "//tools/bazel/selftest:greeting")
    assert done.returncode == 0, done.stderr[-3000:]
    text = (REPO / "bazel-bin/tools/bazel/selftest/greeting.txt").read_text()
    assert text.startswith("hotfloat bazel selftest on 3.11") and str(REPO / ".venv") in text


def test_every_test_area_is_a_bazel_test_and_images_are_manual():
    done = _bazel("query", "tests(//tests:all)", "--output=label")
    assert done.returncode == 0, done.stderr[-3000:]
    targets = set(done.stdout.split())
    areas = {p.parent.name for p in (REPO / "tests").glob("*/test_*.py")} | {"toplevel"}
    assert {f"//tests:{a}" for a in areas} <= targets
    manual = _bazel("query", "attr(tags, manual, //tests:all)", "--output=label")
    assert manual.stdout.split() == ["//tests:images"]


def test_a_server_left_behind_goes_away_within_minutes_not_hours():
    """tests/images/conftest.py shuts the server down once the image tests end; one started by `make images` or a
    person idles 15 minutes (.bazelrc), not Bazel's default 3 hours."""
    done = _bazel("info", "server_pid")
    assert done.returncode == 0, done.stderr[-3000:]
    argv = Path(f"/proc/{done.stdout.strip()}/cmdline").read_bytes().split(b"\0")
    assert b"--max_idle_secs=900" in argv, argv
