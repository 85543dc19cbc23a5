"""collect(): real probes against faithful stand-ins (an nvidia-smi script, an image identity file); never raises."""

import json
import os
import stat
import subprocess
import sys

import pytest

from hotfloat.env import collect

SMI_ROWS = (
    "0, NVIDIA H200, GPU-aaaa-0001, 9.0, 580.159.04, 1980, 1980, 3201, 120.55, 700.00, 34, Enabled\n"
    "1, NVIDIA H200, GPU-bbbb-0002, 9.0, 580.159.04, 345, 1980, 3201, [N/A], 700.00, 31, Enabled\n"
)


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """Puts an nvidia-smi on PATH that answers the --query-gpu call like a two-H200 host does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncase \"$1\" in --query-gpu=*) printf '%s' '{SMI_ROWS}';; *) exit 9;; esac\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return script


def test_cpu_host_leaves_gpu_fields_empty_with_reasons(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, no nvcc, no git
    identity = collect()
    for name in ("gpu_model", "gpu_count", "gpu_capability", "driver", "cuda_graphs"):
        assert getattr(identity, name) is None
        assert "nvidia-smi" in identity.absent[name]
    assert identity.nvcc is None and "nvcc" in identity.absent["nvcc"]
    assert identity.python == ".".join(map(str, sys.version_info[:3]))


def test_package_versions_come_from_installed_metadata():
    import importlib.metadata as md

    identity = collect()
    assert identity.torch == md.version("torch")
    assert identity.triton == md.version("triton")
    assert identity.cutlass_dsl == md.version("nvidia-cutlass-dsl")


def test_torch_is_not_imported_to_read_its_version():
    code = "import sys; from hotfloat.env import collect; i = collect(); print(i.torch, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] != "None" and out[1] == "False"


def test_gpu_fields_from_nvidia_smi(fake_smi):
    identity = collect()
    assert identity.gpu_model == "NVIDIA H200"
    assert identity.gpu_count == 2
    assert identity.gpu_capability == "9.0"
    assert identity.driver == "580.159.04"
    assert identity.cuda_graphs is True
    assert [g.sm_clock_mhz for g in identity.gpus] == [1980.0, 345.0]
    assert identity.gpus[1].power_draw_w is None  # '[N/A]' is a missing reading, not an error


@pytest.mark.parametrize(
    ("visible", "count", "first"), [("1", 1, 1), ("GPU-bbbb", 1, 1), ("1,0", 2, 1), ("0,7,1", 1, 0)]
)
def test_cuda_visible_devices_selects_gpus(fake_smi, monkeypatch, visible, count, first):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    identity = collect()
    assert identity.gpu_visibility == visible
    assert identity.gpu_count == count and identity.gpus[0].index == first


def test_no_visible_gpu_keeps_the_driver(fake_smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    identity = collect()
    assert identity.gpu_count is None and "CUDA_VISIBLE_DEVICES=''" in identity.absent["gpu_count"]
    assert identity.driver == "580.159.04"


def test_cuda_graphs_can_be_turned_off(fake_smi, monkeypatch):
    monkeypatch.setenv("HOTFLOAT_CUDA_GRAPHS", "0")
    assert collect().cuda_graphs is False


def test_a_failing_nvidia_smi_is_a_reason(tmp_path, monkeypatch):
    script = tmp_path / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the driver' >&2\nexit 9\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    identity = collect()
    assert "exited 9" in identity.absent["gpu_model"] and "could not communicate" in identity.absent["driver"]


def test_image_identity_file_and_launcher_digest(tmp_path, monkeypatch):
    path = tmp_path / "image.json"
    path.write_text(
        json.dumps({"name": "compiler", "flavor": "cpu", "inputs_digest": "sha256:" + "a" * 64, "revision": "r1"})
    )
    monkeypatch.setenv("HOTFLOAT_IMAGE_IDENTITY", str(path))
    monkeypatch.setenv("HOTFLOAT_IMAGE_DIGEST", "sha256:" + "b" * 64)
    identity = collect()
    assert identity.image == "compiler:cpu"
    assert identity.image_inputs == "sha256:" + "a" * 64
    assert identity.image_digest == "sha256:" + "b" * 64


@pytest.mark.parametrize("content", ["not json", "[1, 2]"])
def test_a_corrupt_image_identity_file_is_a_reason(tmp_path, monkeypatch, content):
    path = tmp_path / "image.json"
    path.write_text(content)
    monkeypatch.setenv("HOTFLOAT_IMAGE_IDENTITY", str(path))
    identity = collect()
    assert identity.image is None and str(path) in identity.absent["image"]


def test_revision_outside_git_comes_from_the_image(tmp_path, monkeypatch):
    path = tmp_path / "image.json"
    path.write_text(json.dumps({"name": "worker", "flavor": "cpu", "revision": "abc123"}))
    monkeypatch.setenv("HOTFLOAT_IMAGE_IDENTITY", str(path))
    monkeypatch.setenv("PATH", str(tmp_path))  # git unreachable, as inside an image
    assert collect().revision == "abc123"
