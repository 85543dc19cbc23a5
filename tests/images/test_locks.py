"""Locks: exact pins only, and every difference between a lock and what got installed is named."""

from pathlib import Path

import pytest

from hotfloat.errors import InputError
from hotfloat.image.locks import (
    canonical,
    debian_pins,
    differences,
    dpkg_status,
    lock_without,
    python_pins,
    unmet_requirements,
)
from hotfloat.image.spec import load_spec

from .conftest import STATUS, make_wheel

REPO = Path(__file__).resolve().parents[2]
CUDA_LOCK = REPO / "images/worker/requirements-cuda.lock"

LOCK = """torch==2.13.0+cpu \\
    --hash=sha256:aaaa
    # via -r stack.in
Nvidia_Cutlass.DSL==4.8.1 \\
    --hash=sha256:bbbb
"""


def test_pins_are_read_with_canonical_names(tmp_path):
    lock = tmp_path / "r.lock"
    lock.write_text(LOCK)
    assert python_pins(lock) == {"torch": "2.13.0+cpu", "nvidia-cutlass-dsl": "4.8.1"}
    assert canonical("Nvidia_Cutlass.DSL") == "nvidia-cutlass-dsl"


@pytest.mark.parametrize("text", ["torch>=2.0 \\\n    --hash=sha256:aa\n", "torch==2.13.0\n", ""])
def test_unpinned_or_unhashed_locks_are_refused(tmp_path, text):
    lock = tmp_path / "r.lock"
    lock.write_text(text)
    with pytest.raises(InputError):
        python_pins(lock)


def test_lock_without_drops_whole_entries():
    kept = lock_without(LOCK, {"torch"})
    assert kept.startswith("Nvidia_Cutlass.DSL==4.8.1") and "aaaa" not in kept and "via" not in kept


def test_dpkg_status_keeps_installed_packages_only():
    assert dpkg_status(STATUS) == {"base-files": "12.4+deb12u1", "python3": "3.11.2-1+b1"}


def test_differences_name_changed_added_and_missing_packages():
    found = differences("debian", {"a": "1", "b": "2"}, {"a": "1.1", "c": "3"})
    assert found == [
        "debian a: lock 1, resolved 1.1",
        "debian b: lock 2, resolved absent",
        "debian c: lock absent, resolved 3",
    ]
    assert differences("debian", {"a": "1"}, {"a": "1"}) == []


def test_debian_lock_format(tmp_path):
    lock = tmp_path / "debian.lock"
    lock.write_text("# header\npython3=3.11.2-1+b1\n")
    assert debian_pins(lock) == {"python3": "3.11.2-1+b1"}
    lock.write_text("python3\n")
    with pytest.raises(InputError, match="expected package=version"):
        debian_pins(lock)


def test_unmet_requirements_catch_a_mismatched_pair(tmp_path):
    import zipfile

    site = tmp_path / "site"
    site.mkdir()
    for name, version, requires in (
        ("torchlike", "1.0", ("cudart==13.0.96", "extra-only; extra == 'x'")),
        ("cudart", "12.8.0", ()),
    ):
        with zipfile.ZipFile(make_wheel(tmp_path, name, version, requires)) as z:
            z.extractall(site)
    assert unmet_requirements(site) == ["torchlike needs cudart==13.0.96, installed 12.8.0"]


def _engine_pins() -> dict[str, str]:
    return {**python_pins(REPO / "engine/requirements.lock"), **python_pins(REPO / "engine/requirements-nodeps.lock")}


def _engine_drift(image_lock: Path) -> list[str]:
    """Every engine pin the image lock lacks or pins at another version: the GPU worker runs the engine's stack."""
    image = python_pins(image_lock)
    return [
        f"{n}: engine {v}, image {image.get(n, 'absent')}"
        for n, v in sorted(_engine_pins().items())
        if image.get(n) != v
    ]


def test_cuda_worker_lock_carries_the_engine_lock():
    pins = python_pins(CUDA_LOCK)
    assert _engine_drift(CUDA_LOCK) == []
    assert pins["torch"] == _engine_pins()["torch"] and pins["sglang"] == _engine_pins()["sglang"]


def test_engine_drift_names_a_moved_pin(tmp_path):
    drifted = tmp_path / "requirements-cuda.lock"
    torch = f"torch=={python_pins(CUDA_LOCK)['torch']} "
    drifted.write_text(CUDA_LOCK.read_text().replace(torch, "torch==2.13.0 "))
    assert _engine_drift(drifted) == [f"torch: engine {_engine_pins()['torch']}, image 2.13.0"]


def test_cuda_worker_has_the_gpu_packages_the_h200_serves_with():
    """What the device payload adds to the engine lock (sglang-kernel, flashinfer...) at the payload's versions."""
    payload, engine, pins = python_pins(REPO / "engine/device-payload.lock"), _engine_pins(), python_pins(CUDA_LOCK)
    gpu_only = {n: v for n, v in payload.items() if n not in engine}
    assert {"sglang-kernel", "flashinfer-python"} <= set(gpu_only)
    assert {n: pins.get(n) for n in gpu_only} == gpu_only


def test_cuda_flavour_requires_what_its_lock_pins():
    flavour = load_spec(REPO / "images/worker/image.toml").flavor("cuda")
    pins = python_pins(REPO / "images/worker" / flavour.python_lock)
    assert {"torch", "triton", "sglang"} <= set(flavour.require)
    assert {n: pins.get(n) for n in flavour.require} == flavour.require


def test_a_no_deps_distribution_is_not_held_to_its_requirements(tmp_path):
    import zipfile

    site = tmp_path / "site"
    site.mkdir()
    for name, version, requires in (
        ("enginelike", "1.0", ("servingextra>=2",)),
        ("torchlike", "1.0", ("cudart==13.0.96",)),
    ):
        with zipfile.ZipFile(make_wheel(tmp_path, name, version, requires)) as z:
            z.extractall(site)
    assert unmet_requirements(site, no_deps=("EngineLike",)) == ["torchlike needs cudart==13.0.96, installed nothing"]


def test_the_cuda_worker_skips_exactly_the_engines_no_deps_set():
    spec = load_spec(REPO / "images/worker/image.toml")
    assert set(spec.flavors["cuda"].no_deps) == set(python_pins(REPO / "engine/requirements-nodeps.lock"))
    assert spec.flavors["cpu"].no_deps == ()
