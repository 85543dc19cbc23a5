"""Shared fixtures: paths of the repository, its examples, factories for throwaway bundles and qualification records."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session", autouse=True)
def _private_tmpdir():
    """Every temp directory of the run, in this process and its children (also those a test SIGKILLs before they
    clean up), under one folder removed at the end: `make test` leaves no /tmp/hotfloat-* behind. Short and
    world-traversable, as the sandbox and Unix socket paths need."""
    root = tempfile.mkdtemp(prefix="hf-run-", dir="/tmp")
    os.chmod(root, 0o755)
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"], tempfile.tempdir = root, None
    yield
    if before is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = before
    tempfile.tempdir = None
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _no_inherited_width():
    """pytest-xdist's workers get COLUMNS from their controller's terminal, which a serial run never sets: without it
    every test sees the same table width under `make test`'s workers as alone (a test that needs one sets it)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)


def foreign_sqlite(path: Path, table: str) -> bytes:
    """Another program's SQLite database at `path` (one table); returns its bytes, to show a refusal left it alone."""
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE {table} (x)")
    conn.commit()
    conn.close()
    return path.read_bytes()


MANIFEST = """\
bundle_id = "{bundle_id}"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "{slot}"
source = "kernels/k.py"
entry = "{entry}"
"""


@pytest.fixture
def make_bundle(tmp_path):
    """Writes a bundle directory from a kernel source and optional extra files; returns its path."""

    def make(
        kernel: str = "def run(x, out):\n    out.copy_(x[:, : x.shape[1] // 2])\n",
        *,
        slot="activation.silu_and_mul",
        entry="run",
        manifest: str | None = None,
        files: dict[str, str | bytes] | None = None,
        name="b",
    ) -> Path:
        root = tmp_path / name
        (root / "kernels").mkdir(parents=True)
        (root / "manifest.toml").write_text(manifest or MANIFEST.format(bundle_id=name, slot=slot, entry=entry))
        (root / "kernels" / "k.py").write_text(textwrap.dedent(kernel))
        for rel, data in (files or {}).items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return root

    return make


@pytest.fixture(scope="session")
def aot_builds():
    """Both AOT examples built once per session (deviceless, sandboxed): example name -> (bundle, BuildRecord)."""
    from hotfloat.bundle import load_bundle
    from hotfloat.compiler import build_bundle

    out = {}
    for name in ("silu_triton_aot", "silu_cute_aot"):
        bundle = load_bundle(EXAMPLES / name)
        out[name] = (bundle, build_bundle(bundle))
    return out


def calibrated(units: int, false_passes: int = 0, record: str = "calibration-test.json"):
    """A calibration summary of `false_passes` in `units` independent null units that misses its 1% target (as both
    committed records do), for settlement and display tests that must not move when a packaged record grows."""
    from hotfloat.qualify.calibrate.files import clopper_pearson_upper
    from hotfloat.qualify.calibration import Calibrated

    bound = clopper_pearson_upper(false_passes, units)
    return Calibrated(
        record=record,
        sha256="c" * 64,
        device="NVIDIA H100 80GB HBM3",
        units=units,
        false_passes=false_passes,
        false_pass_upper_95=bound,
        controls=0,
        control_passes=0,
        meets_targets=False,
        shortfall=[f"false PASS: {false_passes} of {units} independent null qualifications, upper bound {bound:.1%}"],
    )


@pytest.fixture
def qualified_record():
    """qualified(status, score, gate, seed) -> the record a qualification reply carries, with no engine run behind it."""
    from hotfloat.qualify import Decision, EngineSpec, RuleConfig
    from hotfloat.qualify.workload import make_workload
    from hotfloat.validator import Qualified

    def make(status: str = "PASS", score: float = 0.0, gate: str = "PASS", seed: int = 7, calibration=None):
        """`calibration`: the record the run names (default: none, as on CPU)."""
        from hotfloat.qualify.calibration import Uncalibrated

        return Qualified(
            bundle_identity="0" * 64,
            engine=EngineSpec(preset="tiny", dtype="fp32", device="cpu"),
            engine_identity="e" * 64,
            workload=make_workload("tiny", 512, seed=seed),
            rule=RuleConfig(),
            sandboxed=True,
            frames=[],
            started="2026-01-01T00:00:00+00:00",
            seconds=1.0,
            score=score,
            decision=Decision(status=status, reason=f"{status} run", score=score, gate=gate),
            calibration=calibration or Uncalibrated(why="the CPU rule, never calibrated"),
        )

    return make


EXACT = """
import torch

def run(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""
BROKEN = EXACT.replace("x[:, d:])", "x[:, d:] * 1.01)")
RAISES = "def run(x, out):\n    raise ZeroDivisionError('kernel bug')\n"
GPU_ONLY = """bundle_id = "gpu-only"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
architectures = ["sm_90"]
"""


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """Qualification bundles: an exact-math torch silu, a subtly broken one, one that raises, one that declares no
    CPU support (so it never runs here)."""
    root = tmp_path_factory.mktemp("qualify-bundles")
    out = {}
    for name, kernel, manifest in (
        ("exact", EXACT, None),
        ("broken", BROKEN, None),
        ("raises", RAISES, None),
        ("gpu_only", EXACT, GPU_ONLY),
    ):
        d = root / name
        (d / "kernels").mkdir(parents=True)
        (d / "kernels" / "k.py").write_text(kernel)
        (d / "manifest.toml").write_text(
            manifest
            or (
                f'bundle_id = "{name}"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\n'
                'slot = "activation.silu_and_mul"\nsource = "kernels/k.py"\nentry = "run"\n'
            )
        )
        out[name] = d
    return out
