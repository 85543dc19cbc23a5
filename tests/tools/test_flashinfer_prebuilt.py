"""tools/device/helpers/flashinfer_prebuilt.sh: carried FlashInfer modules land where FlashInfer loads them without
nvcc (`<package>/data/aot`), a corrupt or mismatched carry is refused in one line, and nothing carried leaves
FlashInfer to its JIT. Run on a copy of the helper in a scratch tree, against a stand-in `flashinfer` package (its
name and version are all the helper reads)."""

from __future__ import annotations

import io
import lzma
import os
import shutil
import subprocess
import tarfile
from hashlib import sha256
from pathlib import Path

import pytest

HELPER = Path(__file__).resolve().parents[2] / "tools/device/helpers/flashinfer_prebuilt.sh"
MODULE = "batch_prefill_with_kv_cache_dtype_q_bf16_head_dim_qk_128_sm90"


def carry(tree: Path, version: str = "0.6.12", corrupt: bool = False) -> None:
    """A .device-carry/flashinfer/ as engine/flashinfer_aot.py packs it: aot/<uri>/<uri>.so in an xz tar chunk."""
    out = tree / ".device-carry/flashinfer"
    out.mkdir(parents=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = b"\x7fELF module"
        info = tarfile.TarInfo(f"aot/{MODULE}/{MODULE}.so")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    chunk = lzma.compress(raw.getvalue())
    (out / "flashinfer-aot.tar.xz.00").write_bytes(chunk)
    (out / "SHA256SUMS").write_text(f"{sha256(chunk).hexdigest()}  flashinfer-aot.tar.xz.00\n")
    (out / "MANIFEST.txt").write_text(f"flashinfer {version}, torch x, nvcc 13.0, arch sm_90a\n")
    if corrupt:
        (out / "flashinfer-aot.tar.xz.00").write_bytes(chunk[:-1] + bytes([chunk[-1] ^ 1]))


def source(tree: Path) -> subprocess.CompletedProcess:
    site = tree / "site"
    (site / "flashinfer").mkdir(parents=True, exist_ok=True)
    (site / "flashinfer/__init__.py").write_text("")
    meta = site / "flashinfer_python-0.6.12.dist-info"
    meta.mkdir(exist_ok=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: flashinfer-python\nVersion: 0.6.12\n")
    helper = tree / "tools/device/helpers/flashinfer_prebuilt.sh"
    helper.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(HELPER, helper)
    env = {**os.environ, "PYTHONPATH": str(site), "HOTFLOAT_FLASHINFER_ANY_GPU": "1"}
    script = f'. "{helper}"; rc=$?; echo "aot=${{HOTFLOAT_FLASHINFER_AOT:-}}"; exit $rc'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)


def test_the_modules_land_in_flashinfers_aot_directory_once(tmp_path):
    carry(tmp_path)
    first = source(tmp_path)
    assert first.returncode == 0, first.stderr
    aot = (tmp_path / "site/flashinfer/data/aot").resolve()
    assert (aot / MODULE / f"{MODULE}.so").read_bytes() == b"\x7fELF module"
    assert f"aot={aot}" in first.stdout and "1 modules" in first.stderr
    again = source(tmp_path)
    assert again.returncode == 0 and "already holds" in again.stderr


@pytest.mark.parametrize(
    "kwargs,says",
    [({"corrupt": True}, "does not match SHA256SUMS"), ({"version": "0.6.11"}, "built for flashinfer 0.6.11")],
)
def test_a_corrupt_or_foreign_carry_is_refused_in_one_line(tmp_path, kwargs, says):
    carry(tmp_path, **kwargs)
    p = source(tmp_path)
    assert p.returncode == 1 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "site/flashinfer/data/aot" / MODULE).exists()


def test_nothing_carried_leaves_flashinfer_to_its_jit(tmp_path):
    p = source(tmp_path)
    assert p.returncode == 0 and "nothing carried" in p.stderr and "aot=\n" in p.stdout
