"""An engine's audit entries on disk, for the worker to read back: raw bytes and JSON headers, never pickle."""

from __future__ import annotations

import json
from pathlib import Path


def write_dump(path: Path, entries: list[tuple[dict, bytes]]) -> None:
    """`path`.bin holds the entries' bytes back to back, `path`.json their headers and sizes (written last)."""
    path.with_suffix(".bin").write_bytes(b"".join(d for _, d in entries))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"entries": [h for h, _ in entries], "sizes": [len(d) for _, d in entries]}))
    tmp.replace(path.with_suffix(".json"))


def read_dump(path: Path) -> list[tuple[dict, bytes]]:
    """The entries `write_dump` wrote (their bytes are checked by the validator, not here)."""
    index, blob = json.loads(path.with_suffix(".json").read_text()), path.with_suffix(".bin").read_bytes()
    at, out = 0, []
    for head, size in zip(index["entries"], index["sizes"], strict=False):
        out.append((head, blob[at : at + size]))
        at += size
    return out
