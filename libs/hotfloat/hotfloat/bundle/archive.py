"""Deterministic bundle archives and their bounded, in-memory extraction: archives are always hostile."""

from __future__ import annotations

import gzip
import io
import tarfile

from ..errors import BundleError
from .layout import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, Bundle, bundle_from_files, check_path

MAX_ARCHIVE_BYTES = 16 << 20
MAX_MEMBERS = 4 * MAX_FILES


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
    """Extracts an untrusted archive into memory with hard bounds, then validates it as a bundle."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise BundleError(f"archive is {len(data)} bytes, over the {MAX_ARCHIVE_BYTES}-byte limit")
    files: dict[str, bytes] = {}
    total = members = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for m in tar:
                members += 1
                if members > MAX_MEMBERS:
                    raise BundleError(f"archive has more than {MAX_MEMBERS} members")
                name = m.name.removeprefix("./").rstrip("/")
                if m.isdir():
                    continue
                if not m.isreg():
                    raise BundleError(f"archive member {m.name!r}: links and special files are refused")
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
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile, ValueError) as e:
        raise BundleError(f"not a valid bundle archive: {e}") from None
    return bundle_from_files(files)
