"""The device payload builder (engine/device_payload.py): what it keeps of sgl-kernel, the plugin's entry point it
writes, and chunks that reassemble into the staged tree with checksums, swapped in only when whole."""

import hashlib
import importlib.metadata
import importlib.util
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("device_payload", ROOT / "engine" / "device_payload.py")
payload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(payload)


@pytest.mark.parametrize(
    "member,kept",
    [
        ("sgl_kernel/__init__.py", True),
        ("sgl_kernel/quantization/__init__.py", True),
        ("sgl_kernel/sm90/common_ops.abi3.so", True),
        ("sgl_kernel/spatial_ops.abi3.so", True),
        ("triton_kernels/swiglu_details/_swiglu.py", True),
        ("sglang_kernel-0.4.3.dist-info/METADATA", True),
        ("sgl_kernel/flash_ops.abi3.so", False),
        ("sgl_kernel/sm100/common_ops.abi3.so", False),
        ("sgl_kernel/sm100/__init__.py", False),
        ("lib/libmscclpp.so", False),
        ("sglang_kernel-0.4.3.dist-info/RECORD", False),
    ],
)
def test_sgl_kernel_is_cut_to_what_an_sm90_gpu_loads(member, kept):
    assert bool(payload.KERNEL_KEEP.match(member)) is kept


def test_the_plugin_entry_point_is_found_by_importlib_metadata(tmp_path):
    payload.plugin_dist_info(tmp_path)
    found = [e for e in importlib.metadata.distributions(path=[str(tmp_path)])]
    assert [d.metadata["Name"] for d in found] == ["hotfloat-sglang"]
    eps = [(e.group, e.name, e.value) for e in found[0].entry_points]
    assert eps == [("sglang.srt.plugins", "hotfloat", "hotfloat_sglang.plugin:activate")]


def test_chunks_reassemble_into_the_staged_tree(tmp_path, monkeypatch):
    stage = tmp_path / "stage"
    (stage / "site" / "pkg").mkdir(parents=True)
    blob = b"".join(hashlib.sha256(i.to_bytes(4, "little")).digest() for i in range(32768))  # 1 MiB, incompressible
    (stage / "site" / "pkg" / "blob.bin").write_bytes(blob)
    (stage / ".versions").write_text("sglang 0.5.13.post1\n")
    monkeypatch.setattr(payload, "CHUNK", 256 * 1024)
    out = tmp_path / "engine"
    out.mkdir()
    (out / "stale.txt").write_text("from an older build")
    payload.pack(stage, out)
    chunks = sorted(out.glob("engine.tar.xz.*"))
    assert not (out / "stale.txt").exists() and not (tmp_path / "engine.partial").exists()
    assert all(c.stat().st_size <= 256 * 1024 for c in chunks)
    sums = (out / "SHA256SUMS").read_text().splitlines()
    assert [line.split()[1] for line in sums] == [c.name for c in chunks]
    assert subprocess.run(["sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS"], cwd=out).returncode == 0
    joined = tmp_path / "joined.tar.xz"
    joined.write_bytes(b"".join(c.read_bytes() for c in chunks))
    with tarfile.open(joined) as tar:
        tar.extractall(tmp_path / "unpacked", filter="tar")
    assert (tmp_path / "unpacked" / "site" / "pkg" / "blob.bin").read_bytes() == blob
    assert (tmp_path / "unpacked" / ".versions").read_text() == "sglang 0.5.13.post1\n"


def test_a_failed_pack_leaves_the_previous_payload_whole(tmp_path):
    out = tmp_path / "engine"
    out.mkdir()
    (out / "SHA256SUMS").write_text("previous\n")
    with pytest.raises(payload.PayloadError):
        payload.pack(tmp_path / "missing-stage", out)
    assert (out / "SHA256SUMS").read_text() == "previous\n"


def test_the_lock_pins_every_requirement_once_with_a_hash():
    pins = payload.pins(payload.IN_FILE)
    lock = payload.LOCK.read_text()
    assert len(pins) == len(set(p.split("==")[0] for p in pins))
    for pin in pins:
        assert f"{pin} \\\n    --hash=sha256:" in lock, pin
