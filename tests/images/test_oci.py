"""Layer tars and layouts are deterministic: sorted, clamped, owner-normalised, device nodes dropped."""

import io
import os
import tarfile

import pytest

from hotfloat.errors import InputError
from hotfloat.image.oci import Layout, normalise_tar, tar_directory

EPOCH = 1767225600


def test_tar_directory_ignores_mtimes_and_owners(tmp_path):
    root = tmp_path / "root"
    (root / "b").mkdir(parents=True)
    (root / "b" / "f").write_text("x")
    (root / "a").write_text("y")
    os.symlink("a", root / "link")
    tar_directory(root, tmp_path / "one.tar", EPOCH)
    for path in (root / "a", root / "b" / "f", root / "b"):
        os.utime(path, (EPOCH + 999, EPOCH + 999))  # any time after the epoch is clamped to it
    os.chown(root / "a", 1234, 1234)
    tar_directory(root, tmp_path / "two.tar", EPOCH)
    with tarfile.open(tmp_path / "two.tar") as t:
        members = t.getmembers()
    assert [m.name for m in members] == ["a", "b", "b/f", "link"]
    assert all(m.uid == 0 and m.gid == 0 and m.mtime == EPOCH for m in members)
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()
    (root / "a").write_text("z")
    tar_directory(root, tmp_path / "three.tar", EPOCH)
    assert (tmp_path / "three.tar").read_bytes() != (tmp_path / "one.tar").read_bytes()


def test_normalise_tar_sorts_clamps_and_drops_devices_and_bytecode(tmp_path):
    src = tmp_path / "src.tar"
    with tarfile.open(src, "w") as t:
        for name, kind in (
            ("./z", tarfile.REGTYPE),
            ("./dev/null", tarfile.CHRTYPE),
            ("./a/", tarfile.DIRTYPE),
            ("./a/__pycache__/m.cpython-311.pyc", tarfile.REGTYPE),
        ):
            info = tarfile.TarInfo(name)
            info.type, info.mtime, info.uname = kind, EPOCH + 100, "builder"
            data = b"zz" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data else None)
    normalise_tar(src, tmp_path / "out.tar", EPOCH)
    with tarfile.open(tmp_path / "out.tar") as t:
        members = t.getmembers()
    assert [m.name for m in members] == ["a", "z"]
    assert all(m.mtime == EPOCH and m.uname == "" for m in members)


def test_layout_refuses_bad_digests(tmp_path):
    with pytest.raises(InputError, match="bad blob digest"):
        Layout(tmp_path).blob_path("sha256:../../etc/passwd")


def test_write_image_is_content_addressed(tmp_path):
    for name in ("one", "two"):
        layout = Layout(tmp_path / name)
        (tmp_path / f"{name}.bin").write_bytes(b"layer")
        blob = layout.add_file(tmp_path / f"{name}.bin", "application/vnd.oci.image.layer.v1.tar")
        digest = layout.write_image([blob], {"User": "1:1"}, EPOCH, "hotfloat-x:cpu")
        assert layout.manifest_digest() == digest
        assert layout.config()["rootfs"]["diff_ids"] == [blob.digest]
    assert Layout(tmp_path / "one").manifest_digest() == Layout(tmp_path / "two").manifest_digest()
