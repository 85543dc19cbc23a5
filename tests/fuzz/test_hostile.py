"""A corpus of hostile inputs built here (issue 20's attacks and their relatives): each is refused with one line of
the project's bad-input error, by a target running under the 1 GiB address-space limit and the per-input deadline."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import zipfile
import zlib

import pytest

from hotfloat.cli.main import main
from hotfloat.errors import InputError

MANIFEST = (
    b'bundle_id = "h"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    b'source = "kernels/silu.py"\nentry = "run"\n'
)
KERNEL = b"def run(x, out):\n    out.copy_(x[:, : x.shape[1] // 2])\n"
GOOD = {"manifest.toml": MANIFEST, "kernels/silu.py": KERNEL}
MiB = 1 << 20


def tar(members, fmt=tarfile.GNU_FORMAT) -> bytes:
    """A plain tar of (TarInfo or name, bytes or None) members."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as t:
        for info, data in members:
            if isinstance(info, str):
                info = tarfile.TarInfo(info)
                info.size = len(data)
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return raw.getvalue()


def files(extra=(), base=GOOD) -> list:
    return [(name, data) for name, data in base.items()] + list(extra)


def special(name: str, kind: bytes, **attrs) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    for k, v in attrs.items():
        setattr(info, k, v)
    return info, None


def zero_gzip(head: bytes, zeros: int) -> bytes:
    """A valid gzip of `head` followed by `zeros` zero bytes, built in about a second: after a full flush every MiB of
    zeros deflates to the same bytes, so one block is compressed and repeated (the CRC is computed for real)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(MiB)) + c.flush(zlib.Z_FULL_FLUSH)
    crc, zero = zlib.crc32(head), bytes(MiB)
    for _ in range(zeros // MiB):
        crc = zlib.crc32(zero, crc)
    body = first + block * (zeros // MiB) + c.flush()
    return (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + struct.pack("<II", crc, (len(head) + zeros) & 0xFFFFFFFF)
    )


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    """One tar header block declaring `size` bytes of data that never need to exist."""
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def longname_header(size: int) -> bytes:
    return header("././@LongLink", size, tarfile.GNUTYPE_LONGNAME)


def deep_manifest(levels: int) -> bytes:
    return MANIFEST + b"x = " + b"[" * levels + b"]" * levels + b"\n"


def zipped() -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as z:
        for name, data in GOOD.items():
            z.writestr(name, data)
    return raw.getvalue()


def sparse_member() -> bytes:
    raw = bytearray(tar(files([("kernels/s.py", b"x = 1\n")])))
    # retype the third member's header to GNU sparse and fix its checksum
    off = 2 * 512 + 2 * 512
    header = bytearray(raw[off : off + 512])
    header[156:157] = tarfile.GNUTYPE_SPARSE
    header[148:156] = b" " * 8
    header[148:155] = b"%06o\0" % sum(header)
    raw[off : off + 512] = header
    return gzip.compress(bytes(raw))


CORPUS = {
    # issue 20
    "deep manifest, 100,000 levels (423-byte tar.gz)": (
        gzip.compress(tar(files(base={"manifest.toml": deep_manifest(100_000), "kernels/silu.py": KERNEL}))),
        "over the 65536-character limit",
    ),
    "deep manifest under the size bound": (
        gzip.compress(tar(files(base={"manifest.toml": deep_manifest(30_000), "kernels/silu.py": KERNEL}))),
        "nested deeper than",
    ),
    "GNU long name of 1 GiB, gzip": (zero_gzip(longname_header(1 << 30), 1 << 30), "expands beyond"),
    "GNU long name of 1 GiB, plain tar header": (longname_header(1 << 30) + bytes(64 << 10), "extended header of"),
    "file and directory collision": (
        gzip.compress(tar(files([("kernels/silu.py/evil.py", b"x = 1\n")]))),
        "both a file and a directory",
    ),
    "min_num_tokens 500000": (
        gzip.compress(
            tar(
                files(
                    base={
                        "manifest.toml": MANIFEST + b'metadata = "metadata/m.json"\n',
                        "kernels/silu.py": KERNEL,
                        "metadata/m.json": b'{"min_num_tokens": 500000}',
                    }
                )
            )
        ),
        "beyond the slot's largest token count",
    ),
    # the same kind
    "xz": (lzma.compress(longname_header(1 << 30) + bytes(MiB)), "xz archives are not accepted"),
    "bzip2": (bz2.compress(tar(files())), "bzip2 archives are not accepted"),
    "zip": (zipped(), "zip archives are not accepted"),
    "gzip bomb, one regular file of 1 GiB": (zero_gzip(header("kernels/big.py", 1 << 30), 1 << 30), "expands beyond"),
    "pax header of 100 MiB": (header("pax", 100 * MiB, tarfile.XHDTYPE) + bytes(MiB), "extended header of"),
    "symlink": (
        gzip.compress(tar(files([special("kernels/l.py", tarfile.SYMTYPE, linkname="/etc/passwd")]))),
        "links and special files",
    ),
    "hardlink": (
        gzip.compress(tar(files([special("kernels/h.py", tarfile.LNKTYPE, linkname="kernels/silu.py")]))),
        "links and special files",
    ),
    "character device": (
        gzip.compress(tar(files([special("kernels/d.py", tarfile.CHRTYPE, devmajor=1, devminor=3)]))),
        "links and special files",
    ),
    "fifo": (gzip.compress(tar(files([special("kernels/f.py", tarfile.FIFOTYPE)]))), "links and special files"),
    "sparse member": (sparse_member(), "links and special files"),
    "duplicate member": (gzip.compress(tar(files([("kernels/silu.py", KERNEL)]))), "duplicate path"),
    "2000 members": (gzip.compress(tar([special(f"d{i}", tarfile.DIRTYPE) for i in range(2000)])), "more than"),
    "300 files": (gzip.compress(tar(files([(f"kernels/k{i}.py", b"") for i in range(300)]))), "256 files"),
    "non-UTF-8 name": (gzip.compress(tar(files([(tarfile.TarInfo("kernels/\udcff.py"), b"")]))), "refused path"),
    "newline in a name": (gzip.compress(tar(files([("kernels/a\nb.py", b"")]))), "refused path"),
    "name of 8 KiB": (gzip.compress(tar(files([("k" * 8000 + ".py", b"")]))), "longer than 255"),
    "path escape": (gzip.compress(tar(files([("../../etc/x.py", b"")]))), "refused path"),
    "data after the gzip stream": (gzip.compress(tar(files())) + b"MZ", "data after the gzip stream"),
    "truncated gzip": (gzip.compress(tar(files()))[:-40], "truncated"),
    "garbage": (b"\x00garbage" * 100, "not a valid bundle archive"),
    "manifest with a 60,000-character string": (
        gzip.compress(
            tar(files(base={"manifest.toml": b'bundle_id = "' + b"a" * 60_000 + b'"\n', "kernels/silu.py": KERNEL}))
        ),
        "bundle_id",
    ),
    "manifest with a 5000-digit integer": (
        gzip.compress(
            tar(files(base={"manifest.toml": MANIFEST + b"x = " + b"9" * 5000 + b"\n", "kernels/silu.py": KERNEL}))
        ),
        "not valid TOML",
    ),
    "manifest with a 30,000-part dotted key": (
        gzip.compress(tar(files(base={"manifest.toml": b"a" + b".a" * 30_000 + b" = 1\n", "kernels/silu.py": KERNEL}))),
        "dotted key",
    ),
    "manifest that is not UTF-8": (
        gzip.compress(tar(files(base={"manifest.toml": b"\xff\xfe" + MANIFEST, "kernels/silu.py": KERNEL}))),
        "not UTF-8",
    ),
    "metadata 8000 levels deep": (
        gzip.compress(
            tar(
                files(
                    base={
                        "manifest.toml": MANIFEST + b'metadata = "metadata/m.json"\n',
                        "kernels/silu.py": KERNEL,
                        "metadata/m.json": b"[" * 8000 + b"]" * 8000,
                    }
                )
            )
        ),
        "nested deeper than",
    ),
    "metadata with a 5000-digit integer": (
        gzip.compress(
            tar(
                files(
                    base={
                        "manifest.toml": MANIFEST + b'metadata = "metadata/m.json"\n',
                        "kernels/silu.py": KERNEL,
                        "metadata/m.json": b'{"min_num_tokens": ' + b"9" * 5000 + b"}",
                    }
                )
            )
        ),
        "a number longer than",
    ),
    "metadata with duplicate keys": (
        gzip.compress(
            tar(
                files(
                    base={
                        "manifest.toml": MANIFEST + b'metadata = "metadata/m.json"\n',
                        "kernels/silu.py": KERNEL,
                        "metadata/m.json": b'{"min_num_tokens": 1, "min_num_tokens": 4}',
                    }
                )
            )
        ),
        "duplicate key",
    ),
    "metadata NaN": (
        gzip.compress(
            tar(
                files(
                    base={
                        "manifest.toml": MANIFEST + b'metadata = "metadata/m.json"\n',
                        "kernels/silu.py": KERNEL,
                        "metadata/m.json": b'{"min_num_tokens": NaN}',
                    }
                )
            )
        ),
        "NaN is not a number",
    ),
}


def test_the_corpus_is_what_it_claims():
    assert len(CORPUS["deep manifest, 100,000 levels (423-byte tar.gz)"][0]) < 1024
    bomb = CORPUS["GNU long name of 1 GiB, gzip"][0]
    assert len(bomb) < 2 * MiB
    inflate = zlib.decompressobj(wbits=31)
    head = inflate.decompress(bomb, 512)
    assert tarfile.TarInfo.frombuf(head, "utf-8", "surrogateescape").size == 1 << 30


@pytest.mark.parametrize("name", list(CORPUS))
def test_hostile_archive_refused_with_one_line(target, name):
    data, why = CORPUS[name]
    answer = target("archive", data)
    assert answer["kind"] == "refused" and why in answer["error"], answer


def test_valid_bundle_still_accepted(target):
    assert target("archive", gzip.compress(tar(files())))["kind"] == "ok"
    assert target("archive", tar(files(), fmt=tarfile.PAX_FORMAT))["kind"] == "ok"


@pytest.mark.parametrize(
    "name",
    [
        "deep manifest, 100,000 levels (423-byte tar.gz)",
        "GNU long name of 1 GiB, gzip",
        "file and directory collision",
        "min_num_tokens 500000",
    ],
)
def test_cli_refuses_the_issue_attacks_with_one_error_line(name, tmp_path, capsys):
    archive = tmp_path / "hostile.tar.gz"
    archive.write_bytes(CORPUS[name][0])
    with pytest.raises(SystemExit) as e:
        main(["validator", "submit", str(archive), "--ledger", str(tmp_path / "l.db")])
    err = capsys.readouterr().err
    assert e.value.code == InputError.exit_code, err
    assert err.startswith("error: ") and err.count("\n") == 1 and CORPUS[name][1] in err


def test_cli_refuses_a_deep_manifest_directory(tmp_path, capsys):
    root = tmp_path / "b"
    (root / "kernels").mkdir(parents=True)
    (root / "manifest.toml").write_bytes(deep_manifest(30_000))
    (root / "kernels" / "silu.py").write_bytes(KERNEL)
    for command in (["hash", str(root)], ["scan", str(root)]):
        with pytest.raises(SystemExit) as e:
            main(command)
        err = capsys.readouterr().err
        assert e.value.code == InputError.exit_code and err.count("\n") == 1 and "nested deeper than" in err, err
