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


@pytest.mark.parametrize(
    "kind,why",
    [
        ("sym", "links and special files"),
        ("hard", "links and special files"),
        ("dev", "links and special files"),
        ("fifo", "links and special files"),
    ],
)
def test_links_and_devices_refused(make_bundle, kind, why):
    b = load_bundle(make_bundle())
    info = tarfile.TarInfo("kernels/evil.py")
    info.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "dev": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[
        kind
    ]
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


def test_only_tar_and_gzip_are_accepted(make_bundle):
    import bz2
    import lzma

    b = load_bundle(make_bundle())
    plain = gzip.decompress(pack(b))
    assert unpack(plain).identity == b.identity
    for compress, kind in ((bz2.compress, "bzip2"), (lzma.compress, "xz")):
        with pytest.raises(BundleError, match=f"{kind} archives are not accepted"):
            unpack(compress(plain))


def test_gzip_is_inflated_only_up_to_the_bound():
    from hotfloat.bundle.archive import MAX_TAR_BYTES

    with pytest.raises(BundleError, match="expands beyond"):
        unpack(gzip.compress(bytes(MAX_TAR_BYTES + 1)))
    with pytest.raises(BundleError, match="data after the gzip stream"):
        unpack(gzip.compress(b"") + b"junk")
    with pytest.raises(BundleError, match="truncated"):
        unpack(gzip.compress(bytes(4096))[:20])


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE])
def test_extended_headers_are_bounded_before_they_are_read(kind):
    from hotfloat.bundle.archive import MAX_HEADER_BYTES

    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = kind, 1 << 30
    with pytest.raises(BundleError, match=f"extended header of {1 << 30} bytes .* over the {MAX_HEADER_BYTES}-byte"):
        unpack(info.tobuf(format=tarfile.USTAR_FORMAT) + bytes(4096))


def test_long_names_within_the_header_bound_still_work(make_bundle):
    b = load_bundle(make_bundle())
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, data in b.files.items():
            info = tarfile.TarInfo(f"./{path}" if path.endswith(".toml") else path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        deep = "kernels/" + "d" * 120 + "/" + "e" * 120 + ".py"
        info = tarfile.TarInfo(deep)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))
    assert deep in unpack(gzip.compress(raw.getvalue())).files


def test_a_path_that_is_both_file_and_directory_is_refused(make_bundle):
    b = load_bundle(make_bundle())
    with pytest.raises(BundleError, match="kernels/k.py is both a file and a directory"):
        unpack(tar_gz([reg(p, d) for p, d in b.files.items()] + [reg("kernels/k.py/evil.py")]))


@pytest.mark.parametrize("kind", [tarfile.CONTTYPE, tarfile.GNUTYPE_SPARSE])
def test_contiguous_and_sparse_members_are_refused(make_bundle, kind):
    b = load_bundle(make_bundle())
    info, data = reg("kernels/odd.py", b"x = 1\n")
    info.type = kind
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for p, d in b.files.items():
            tar.addfile(reg(p, d)[0], io.BytesIO(d))
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BundleError, match="links and special files"):
        unpack(gzip.compress(raw.getvalue()))


def test_one_top_level_folder_is_the_bundle_root_and_vcs_paths_are_left_out(make_bundle):
    b = load_bundle(make_bundle())
    nested = tar_gz(
        [
            (directory("b/"), None),
            *(reg(f"b/{p}", d) for p, d in b.files.items()),
            reg("b/.git/HEAD"),
            reg("b/kernels/__pycache__/k.cpython-311.pyc"),
            reg("b/.gitignore"),
        ]
    )
    assert unpack(nested).identity == b.identity
    two = tar_gz([*(reg(f"b/{p}", d) for p, d in b.files.items()), reg("c/x.py")])
    with pytest.raises(BundleError, match="manifest.toml is missing"):
        unpack(two)


def test_an_archive_leaves_out_what_the_folder_reader_leaves_out(make_bundle, tmp_path):
    """`tar czf b.tar.gz b` of a bundle `chain package` wrote into: its root `dist/` is ignored, as when read from the
    folder (one rule), with or without the top folder; a `dist/` deeper down is a bundle path like any other."""
    root = make_bundle(files={"dist/b.tar.gz": b"\x1f\x8b", "dist/notes.bin": b"\0"})
    folder = load_bundle(root)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        tar.add(root, arcname="b")
    assert unpack(raw.getvalue()).identity == folder.identity
    assert unpack(raw.getvalue()).ignored == folder.ignored == ("dist/",)  # named as the folder reader names it
    flat = tar_gz(
        [reg(f"./{p}", d) for p, d in folder.files.items()]
        + [reg("./dist/b.tar.gz"), reg("./kernels/__pycache__/k.pyc"), reg("./.gitignore")]
    )
    assert unpack(flat).identity == folder.identity
    assert unpack(flat).ignored == (".gitignore", "dist/", "kernels/__pycache__/")
    with pytest.raises(BundleError, match="kernels/dist/x.tar.gz: file type not allowed"):
        unpack(tar_gz([reg(p, d) for p, d in folder.files.items()] + [reg("kernels/dist/x.tar.gz")]))
