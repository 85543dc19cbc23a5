"""Prints which interpreter Bazel ran, so the test can tell the project venv toolchain was used."""

import sys

print(f"hotfloat bazel selftest on {sys.version_info.major}.{sys.version_info.minor} at {sys.prefix}")
