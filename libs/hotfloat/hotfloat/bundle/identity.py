"""Canonical bundle identity: SHA-256 over sorted relative paths and bytes, independent of directory name,
mtimes and archive format."""

import hashlib
import struct
from collections.abc import Mapping


def bundle_identity(files: Mapping[str, bytes]) -> str:
    """Hex SHA-256 over each file as (4-byte BE path length, UTF-8 path, 8-byte BE data length, data), sorted by path."""
    h = hashlib.sha256()
    for path in sorted(files):
        raw = path.encode("utf-8")
        data = files[path]
        h.update(struct.pack(">I", len(raw)))
        h.update(raw)
        h.update(struct.pack(">Q", len(data)))
        h.update(data)
    return h.hexdigest()
