"""Runs pytest for a Bazel test target on the real source tree, so Bazel and `make test` run the same tests.

The declared srcs/data only decide when Bazel may reuse a cached result; the run itself reads the checkout.
"""

import os
import sys
from pathlib import Path

import pytest


def _workspace() -> Path:
    """The checkout itself: runfiles are symlinks into it, and tests expect the repo layout (venv, examples)."""
    marker = Path(os.environ.get("TEST_SRCDIR", ".")) / os.environ.get("TEST_WORKSPACE", "hotfloat_repo") / "pytest.ini"
    return marker.resolve().parent


if __name__ == "__main__":
    root = _workspace()
    os.chdir(root)
    sys.path[:0] = [str(root / "libs" / "hotfloat"), str(root / "services")]  # the tree under test, not a copy
    junit = os.environ.get("XML_OUTPUT_FILE")
    args = [*sys.argv[1:], "-q", "-p", "no:cacheprovider"] + ([f"--junitxml={junit}"] if junit else [])
    sys.exit(pytest.main(args))
