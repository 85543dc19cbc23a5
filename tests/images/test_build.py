"""build_image end to end on stand-ins (tiny base tar, local wheels): reproducible, locked, and self-describing."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from hotfloat.errors import InputError
from hotfloat.image.build import build_image, source_files
from hotfloat.image.inspect import inspect_image
from hotfloat.image.layers import python_layer
from hotfloat.image.spec import load_spec

from .conftest import lock_line

REPO = Path(__file__).resolve().parents[2]
SPEC = """name = "probe"
summary = "test image"
entrypoint = ["hotfloat", "env"]

[flavors.cpu]
python_lock = "requirements.lock"
require = {{ alpha = "{alpha}" }}
"""


def _image_dir(tmp_path: Path, wheels: Path, pins: dict[str, str], alpha_required: str = "1.0") -> Path:
    folder = tmp_path / "images" / "probe"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "image.toml").write_text(SPEC.format(alpha=alpha_required))
    (folder / "requirements.lock").write_text(
        "".join(lock_line(next(wheels.glob(f"{n}-{v}-*.whl")), n, v) for n, v in pins.items())
    )
    return folder


def _stack(tmp_path: Path, wheels: Path, fake_base) -> tuple[Path, Path]:
    lock = tmp_path / "stack.lock"
    lock.write_text(lock_line(next(wheels.glob("beta-2.1-*.whl")), "beta", "2.1"))
    tar = tmp_path / "stack.tar"
    python_layer(lock, tar, 1767225600, wheels=wheels)
    return lock, tar


def _snapshot(tmp_path: Path) -> Path:
    """A frozen copy of the shipped sources, so a concurrent edit of the tree cannot change one build of a pair."""
    repo = tmp_path / "repo"
    if not repo.exists():
        for rel, path in source_files(REPO):
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, repo / rel)
    return repo


def _build(tmp_path, wheels, fake_base, image_dir, out_name, stack=None) -> str:
    return build_image(
        load_spec(image_dir / "image.toml"),
        "cpu",
        repo=_snapshot(tmp_path),
        image_dir=image_dir,
        base=fake_base,
        stack=stack,
        out=tmp_path / out_name,
        wheels=wheels,
    )


def test_equal_inputs_give_equal_digests_and_the_epoch_changes_them(tmp_path, wheels, fake_base, monkeypatch):
    image_dir = _image_dir(tmp_path, wheels, {"alpha": "1.0", "beta": "2.1"})
    stack = _stack(tmp_path, wheels, fake_base)
    first = _build(tmp_path, wheels, fake_base, image_dir, "one", stack)
    second = _build(tmp_path, wheels, fake_base, image_dir, "two", stack)
    assert first == second and first.startswith("sha256:")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225601")
    assert _build(tmp_path, wheels, fake_base, image_dir, "three", stack) != first


def test_inspect_reads_packages_revision_and_files(tmp_path, wheels, fake_base):
    image_dir = _image_dir(tmp_path, wheels, {"alpha": "1.0", "beta": "2.1"})
    digest = _build(tmp_path, wheels, fake_base, image_dir, "img", _stack(tmp_path, wheels, fake_base))
    report = inspect_image(str(tmp_path / "img"))
    assert report.digest == digest
    assert len(report.layers) == 4  # base, stack, image python, project
    assert report.user == "10001:10001" and report.entrypoint == ("hotfloat", "env")
    ident = report.identity
    assert ident.python == {"alpha": "1.0", "beta": "2.1"}
    assert ident.debian == {"base-files": "12.4+deb12u1", "python3": "3.11.2-1+b1"}
    assert ident.revision.startswith("src-sha256:") and ident.source_date_epoch == 1767225600
    source = tmp_path / "repo/libs/hotfloat/hotfloat/verdict.py"
    entry = next(f for f in report.files if f.path == "/opt/hotfloat/lib/python3.11/site-packages/hotfloat/verdict.py")
    assert entry.sha256 == hashlib.sha256(source.read_bytes()).hexdigest() and entry.layer == 3
    assert any(
        f.path.startswith("/opt/hotfloat/lib/python3.11/site-packages/alpha/") and f.layer == 2 for f in report.files
    )
    assert any(
        f.path.startswith("/opt/hotfloat/lib/python3.11/site-packages/beta/") and f.layer == 1 for f in report.files
    )


def test_a_lock_that_breaks_a_required_pin_is_refused(tmp_path, wheels, fake_base):
    image_dir = _image_dir(tmp_path, wheels, {"alpha": "1.0", "beta": "2.1"}, alpha_required="9.9")
    with pytest.raises(InputError, match="required pins: alpha: lock pins 1.0, spec requires 9.9"):
        _build(tmp_path, wheels, fake_base, image_dir, "img")


def test_a_lock_missing_a_dependency_is_refused(tmp_path, wheels, fake_base):
    image_dir = _image_dir(tmp_path, wheels, {"alpha": "1.0"})
    with pytest.raises(InputError, match="not self-consistent:\nalpha needs beta>=2, installed nothing"):
        _build(tmp_path, wheels, fake_base, image_dir, "img")


def test_an_image_lock_that_drifts_from_the_stack_does_not_use_it(tmp_path, wheels, fake_base):
    from .conftest import make_wheel

    make_wheel(wheels, "beta", "3.0")
    image_dir = _image_dir(tmp_path, wheels, {"alpha": "1.0", "beta": "3.0"})
    digest = _build(tmp_path, wheels, fake_base, image_dir, "img", _stack(tmp_path, wheels, fake_base))
    report = inspect_image(str(tmp_path / "img"))
    assert report.digest == digest and len(report.layers) == 3  # the stack layer was skipped, beta 3.0 installed
    assert report.identity.python["beta"] == "3.0"


def test_stack_layer_refuses_a_lock_that_changes_its_pins(tmp_path, wheels, fake_base):
    from .conftest import make_wheel

    make_wheel(wheels, "beta", "3.0")
    lock = tmp_path / "image.lock"
    lock.write_text(lock_line(next(wheels.glob("beta-3.0-*.whl")), "beta", "3.0"))
    _, stack_tar = _stack(tmp_path, wheels, fake_base)
    with pytest.raises(InputError, match="does not keep the shared stack's pins: beta: stack 2.1, lock 3.0"):
        python_layer(lock, tmp_path / "out.tar", 1767225600, below=stack_tar, wheels=wheels)


def test_a_damaged_layout_is_an_input_error(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "index.json").write_text("{not json")
    with pytest.raises(InputError, match="not an OCI image layout"):
        inspect_image(str(tmp_path / "bad"))
    with pytest.raises(InputError, match="run `make images` first"):
        inspect_image(str(tmp_path / "missing"))
