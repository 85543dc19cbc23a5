"""Archives are deterministic on the way out and bounded, validated and link-free on the way in."""

import gzip
import io
import tarfile

import pytest

from hotfloat.bundle import load_bundle, pack, unpack
from hotfloat.bundle.archive import MAX_ARCHIVE_BYTES
from hotfloat.errors import BundleError


def tar_gz(members):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(raw.getvalue())


def reg(name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def directory(name):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


def test_pack_is_deterministic_and_round_trips(make_bundle):
    b = load_bundle(make_bundle())
    assert pack(b) == pack(load_bundle(make_bundle(name="b2").parent / "b"))
    back = unpack(pack(b))
    assert back.identity == b.identity and back.files == b.files


def test_identity_independent_of_archive_format(make_bundle):
    b = load_bundle(make_bundle())
    other = tar_gz([reg(f"./{p}", d) for p, d in reversed(list(b.files.items()))])
    assert unpack(other).identity == b.identity


@pytest.mark.parametrize("kind,why", [("sym", "links and special files"), ("hard", "links and special files"),
                                      ("dev", "links and special files"), ("fifo", "links and special files")])
def test_links_and_devices_refused(make_bundle, kind, why):
    b = load_bundle(make_bundle())
    info = tarfile.TarInfo("kernels/evil.py")
    info.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "dev": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[kind]
    info.linkname = "/etc/passwd"
    members = [reg(p, d) for p, d in b.files.items()] + [(info, None)]
    with pytest.raises(BundleError, match=why):
        unpack(tar_gz(members))


@pytest.mark.parametrize("name", ["../escape.py", "/abs.py", "kernels/../../x.py"])
def test_path_escapes_refused(make_bundle, name):
    b = load_bundle(make_bundle())
    with pytest.raises(BundleError, match="refused path"):
        unpack(tar_gz([reg(p, d) for p, d in b.files.items()] + [reg(name)]))


def test_bombs_refused():
    with pytest.raises(BundleError, match="over the"):
        unpack(b"\0" * (MAX_ARCHIVE_BYTES + 1))
    bomb = tar_gz([reg(f"kernels/f{i}.py", b"\0" * (1 << 20)) for i in range(10)])
    assert len(bomb) < MAX_ARCHIVE_BYTES
    with pytest.raises(BundleError, match="expands beyond"):
        unpack(bomb)
    with pytest.raises(BundleError, match="exceeds the file limit"):
        unpack(tar_gz([reg("kernels/big.py", b"\0" * (2 << 20))]))
    with pytest.raises(BundleError, match="more than"):
        unpack(tar_gz([(directory(f"d{i}"), None) for i in range(1100)]))


def test_garbage_and_duplicates_refused():
    with pytest.raises(BundleError, match="not a valid bundle archive"):
        unpack(b"definitely not a tarball")
    with pytest.raises(BundleError, match="duplicate path"):
        unpack(tar_gz([reg("kernels/a.py"), reg("kernels/a.py")]))
