"""Bazel works offline on this tree: a real (small) build on the venv toolchain, and one test target per area."""

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def _no_server_left():
    """`make test` leaves no Bazel server behind (one idles for hours at ~260 MB); shutdown waits for any running
    command, so a build started elsewhere finishes first."""
    yield
    subprocess.run(["bazel", "shutdown"], cwd=REPO, capture_output=True, timeout=300, check=False)


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
