"""An engine's audit entries, packed and on disk for the worker to read back: raw bytes and JSON headers, never
pickle."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import torch

from .domain import DTYPE_NAMES


def pack_entry(head: dict, tensors: Iterable[tuple[str, torch.Tensor]]) -> tuple[dict, bytes]:
    """One entry: `head` with the first tensor's dtype and each tensor's shape and offset (relative to the entry's
    bytes), and the tensors' bytes back to back."""
    shapes, blobs, at, dtype = {}, [], 0, None
    for name, t in tensors:
        dtype = dtype or DTYPE_NAMES[t.dtype]
        blobs.append(t.contiguous().cpu().view(torch.uint8).numpy().tobytes())
        shapes[name] = {"shape": list(t.shape), "offset": at}
        at += len(blobs[-1])
    return {**head, "dtype": dtype, "tensors": shapes}, b"".join(blobs)


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
