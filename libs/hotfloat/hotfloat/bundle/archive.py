"""Deterministic bundle archives and their bounded, in-memory extraction: archives are always hostile.

Accepted: a plain tar or a gzip-compressed one (what `pack` writes). Every bound holds before the bytes it guards
are allocated: the compressed size, the decompressed size (a 1 MB gzip of a 1 GiB long name stops at the bound, in
a fraction of a second), the declared size of each extended header (GNU long names, pax records) before tarfile reads it, the
member count, each file's size and the total. Only regular files and directories are accepted.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from dataclasses import replace

from ..errors import BundleError
from .layout import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, Bundle, bundle_from_files, check_path, is_ignored

MAX_ARCHIVE_BYTES = 16 << 20
MAX_MEMBERS = 4 * MAX_FILES
MAX_HEADER_BYTES = 8 << 10
"""Largest extended header (GNU long name or link, pax record set) read into memory."""
MAX_TAR_BYTES = MAX_TOTAL_BYTES + MAX_MEMBERS * 2 * tarfile.BLOCKSIZE + tarfile.RECORDSIZE
"""Decompressed tar stream: the bundle's bytes plus a header block and padding per member, and the end record."""
_EXTENDED = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)
_REFUSED_FORMATS = {b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}


def pack(bundle: Bundle) -> bytes:
    """A byte-identical tar.gz for identical files: sorted, mtime 0, root-owned, mode 0644."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in bundle.files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def unpack(data: bytes) -> Bundle:
    """Extracts an untrusted archive into memory with hard bounds, then validates it as a bundle; what was left out
    is on the bundle's `ignored`, as a folder's is."""
    ignored: list[str] = []
    return replace(bundle_from_files(read_archive(data, ignored)), ignored=tuple(sorted(set(ignored))))


def read_archive(data: bytes, ignored: list[str] | None = None) -> dict[str, bytes]:
    """Every regular file of an untrusted tar or tar.gz, under all the bounds, without bundle validation (the Cacheon
    importer reads archives whose manifest is not a hotfloat manifest yet). One top-level folder holding everything
    and a manifest (`tar czf b.tar.gz b/`) is taken as the bundle root, and what the folder reader leaves out
    (`layout.is_ignored`: VCS, bytecode, the root's `dist/`) is left out from that root, each left-out folder or file
    appended to `ignored` when given (a folder as `name/`, once per member under it)."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise BundleError(f"archive is {len(data)} bytes, over the {MAX_ARCHIVE_BYTES}-byte limit")
    raw = _tar_bytes(bytes(data))
    files: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:", tarinfo=_BoundedInfo) as tar:
            members = _file_members(tar)
            root = _root([name for name, _ in members])
            for path, m in members:
                name = path.removeprefix(root)
                if is_ignored(name):
                    if ignored is not None:
                        ignored.append(_ignored_as(name))
                    continue
                if m.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or m.sparse is not None:
                    raise BundleError(f"archive member {name[:255]!r}: links and special files are refused")
                check_path(name)
                if m.size > MAX_FILE_BYTES:
                    raise BundleError(f"archive member {name}: {m.size} bytes exceeds the file limit")
                total += m.size
                if total > MAX_TOTAL_BYTES or len(files) >= MAX_FILES:
                    raise BundleError(f"archive expands beyond {MAX_TOTAL_BYTES} bytes or {MAX_FILES} files")
                if name in files:
                    raise BundleError(f"archive member {name}: duplicate path")
                fh = tar.extractfile(m)
                files[name] = fh.read(m.size + 1) if fh else b""
                if len(files[name]) != m.size:
                    raise BundleError(f"archive member {name}: size does not match its header")
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        raise BundleError(f"not a valid bundle archive: {e}") from None
    return files


def _ignored_as(name: str) -> str:
    """What the folder reader would name for an ignored member: the outermost ignored folder, else the file."""
    parts = name.split("/")
    return next(
        (f"{'/'.join(parts[:i])}/" for i in range(1, len(parts)) if is_ignored(f"{'/'.join(parts[:i])}/")), name
    )


def _file_members(tar: tarfile.TarFile) -> list[tuple[str, tarfile.TarInfo]]:
    """Every member but directories, with its name as a relative path; headers only (the bundle root, and so what is
    ignored, is known once all names are)."""
    out = []
    for count, m in enumerate(tar, 1):
        if count > MAX_MEMBERS:
            raise BundleError(f"archive has more than {MAX_MEMBERS} members")
        if not m.isdir():
            out.append((m.name.removeprefix("./").rstrip("/"), m))
    return out


def _root(names: list[str]) -> str:
    """`top/` when every name is under `top/` and `top/manifest.toml` is one of them; else '' (the archive's root)."""
    tops = {name.split("/", 1)[0] for name in names}
    top = tops.pop() if len(tops) == 1 else None
    return f"{top}/" if top is not None and f"{top}/manifest.toml" in names else ""


def _tar_bytes(data: bytes) -> bytes:
    """The tar stream: gzip is decompressed up to MAX_TAR_BYTES and no further; other compressions are refused."""
    for magic, kind in _REFUSED_FORMATS.items():
        if data.startswith(magic):
            raise BundleError(f"{kind} archives are not accepted (a bundle is a tar or tar.gz)")
    if not data.startswith(b"\x1f\x8b"):
        if len(data) > MAX_TAR_BYTES:
            raise BundleError(f"tar archive is {len(data)} bytes, over the {MAX_TAR_BYTES}-byte limit")
        return data
    inflate = zlib.decompressobj(wbits=31)
    try:
        out = inflate.decompress(data, MAX_TAR_BYTES + 1)
    except zlib.error as e:
        raise BundleError(f"not a valid bundle archive: gzip: {e}") from None
    if len(out) > MAX_TAR_BYTES or inflate.unconsumed_tail:
        raise BundleError(f"archive expands beyond {MAX_TAR_BYTES} bytes when decompressed (refused)")
    if not inflate.eof:
        raise BundleError("not a valid bundle archive: the gzip stream is truncated")
    if inflate.unused_data.strip(b"\0"):
        raise BundleError("not a valid bundle archive: data after the gzip stream")
    return out


class _BoundedInfo(tarfile.TarInfo):
    """Reads each header block first and refuses an extended header whose declared size is over MAX_HEADER_BYTES,
    before tarfile would read all of it into memory (a GNU long name can claim gigabytes)."""

    @classmethod
    def fromtarfile(cls, tar):
        start = tar.fileobj.tell()
        head = cls.frombuf(tar.fileobj.read(tarfile.BLOCKSIZE), tar.encoding, tar.errors)
        if head.type in _EXTENDED and head.size > MAX_HEADER_BYTES:
            raise BundleError(
                f"archive extended header of {head.size} bytes (long name or pax) is over the "
                f"{MAX_HEADER_BYTES}-byte limit"
            )
        tar.fileobj.seek(start)
        return super().fromtarfile(tar)
