"""The tensor wire codec between the trusted parent and a candidate child: raw bytes behind a validated header.

No pickle, no code, no object graphs: a frame is MAGIC, a u32 header length, a JSON header
{"kind", "meta", "tensors": [{name, dtype, shape, stride, storage}]}, then each tensor's flat buffer.
This module imports only the standard library and torch because the child loads it by file path
inside the sandbox, where the hotfloat package is deliberately absent. Framing needs no torch, so torch is imported
on the first tensor conversion: a launcher can start a child before the parent pays for importing torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import select
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

MAGIC = b"HFW1"
MAX_HEADER_BYTES = 1 << 20
MAX_TENSORS = 16
MAX_DIMS = 8
MAX_ELEMENTS = 1 << 36
ITEMSIZE = {"bf16": 2, "fp16": 2, "fp32": 4, "int32": 4, "int64": 8, "uint8": 1}
"""Bytes per element of each dtype name the wire carries."""
_TORCH_NAMES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
}
_TENSOR_KEYS = {"name", "dtype", "shape", "stride", "storage"}


class ProtocolError(Exception):
    """The peer broke the frame format or its limits; from a child this is the candidate's fault."""


@dataclass(frozen=True)
class TensorHeader:
    """A strided view over a flat buffer of `storage` elements; the buffer travels as raw bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage: int

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.storage * self.itemsize

    @classmethod
    def parse(cls, raw: object) -> TensorHeader:
        """Validates an untrusted header: known dtype, small integer dims, and a view that fits its buffer."""
        if not isinstance(raw, dict) or set(raw) != _TENSOR_KEYS:
            raise ProtocolError(f"tensor header must have exactly the keys {sorted(_TENSOR_KEYS)}")
        name, dtype, shape, stride, storage = (raw[k] for k in ("name", "dtype", "shape", "stride", "storage"))
        if not isinstance(name, str) or not name.isidentifier() or len(name) > 64:
            raise ProtocolError("tensor name must be a short identifier")
        if dtype not in ITEMSIZE:
            raise ProtocolError(f"tensor {name}: unknown dtype {dtype!r}")
        for label, dims in (("shape", shape), ("stride", stride)):
            if not isinstance(dims, list) or len(dims) > MAX_DIMS or not all(_small_int(d) for d in dims):
                raise ProtocolError(f"tensor {name}: {label} must be a list of at most {MAX_DIMS} small integers")
        if len(shape) != len(stride) or not _small_int(storage) or math.prod(shape) > MAX_ELEMENTS:
            raise ProtocolError(f"tensor {name}: inconsistent shape, stride and storage")
        header = cls(name, dtype, tuple(shape), tuple(stride), storage)
        if extent(header.shape, header.stride) > storage:
            raise ProtocolError(f"tensor {name}: view reaches past its {storage}-element buffer")
        return header

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "stride": list(self.stride),
            "storage": self.storage,
        }


def dtype_name(dtype: torch.dtype) -> str:
    """The wire name of a torch dtype."""
    return next(k for k, v in _TORCH_NAMES.items() if str(dtype) == f"torch.{v}")


def _small_int(v: object) -> bool:
    return type(v) is int and 0 <= v <= MAX_ELEMENTS


def extent(shape: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """Elements a strided view spans in its buffer (0 for an empty view)."""
    if 0 in shape:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=False))


@dataclass(frozen=True)
class Frame:
    """One decoded message: a kind, a JSON-safe meta dict, and tensors as (header, raw bytes)."""

    kind: str
    meta: dict
    tensors: tuple[tuple[TensorHeader, bytes], ...] = ()

    def tensor(self, name: str) -> tuple[TensorHeader, bytes]:
        for h, data in self.tensors:
            if h.name == name:
                return h, data
        raise ProtocolError(f"frame {self.kind!r} has no tensor {name!r}")


def flat_bytes(buffer: torch.Tensor) -> bytes:
    """Raw bytes of a flat buffer (any device), in memory order."""
    import torch

    return buffer.detach().reshape(-1).contiguous().cpu().view(torch.uint8).numpy().tobytes()


def digest(buffers: list[torch.Tensor]) -> str:
    """SHA-256 over flat buffers' bytes: the fingerprint compared right after a call and again after a delay."""
    h = hashlib.sha256()
    for b in buffers:
        h.update(flat_bytes(b))
    return h.hexdigest()


def to_tensor(header: TensorHeader, data: bytes, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Rebuilds (flat buffer, strided view) from validated bytes; the buffer is owned, never aliased to `data`."""
    import torch

    if len(data) != header.nbytes:
        raise ProtocolError(f"tensor {header.name}: {len(data)} bytes, header says {header.nbytes}")
    dtype = getattr(torch, _TORCH_NAMES[header.dtype])
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype) if data else torch.empty(0, dtype=dtype)
    flat = flat.to(device)
    return flat, flat.as_strided(header.shape, header.stride)


def encode(kind: str, meta: dict, tensors: list[tuple[TensorHeader, bytes]] = ()) -> bytes:
    """Serialises one frame; headers are re-validated so a bad frame is caught at its source too."""
    for h, data in tensors:
        TensorHeader.parse(h.as_json())
        if len(data) != h.nbytes:
            raise ProtocolError(f"tensor {h.name}: {len(data)} bytes, header says {h.nbytes}")
    head = json.dumps(
        {"kind": kind, "meta": meta, "tensors": [h.as_json() for h, _ in tensors]},
        separators=(",", ":"),
        allow_nan=False,
    ).encode()
    if len(head) > MAX_HEADER_BYTES:
        raise ProtocolError("frame header too large")
    return b"".join([MAGIC, len(head).to_bytes(4, "big"), head, *(d for _, d in tensors)])


def write_frame(fd: int, frame: bytes, deadline: float | None = None) -> None:
    """Writes all bytes, giving up at `deadline` (monotonic seconds) if the peer stops reading."""
    view = memoryview(frame)
    while view:
        _wait(fd, select.POLLOUT, deadline)
        try:
            n = os.write(fd, view[: 1 << 20])
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError) as e:
            raise ProtocolError(f"peer closed the channel: {e}") from None
        view = view[n:]


def read_frame(fd: int, *, kinds: set[str], max_payload: int, deadline: float | None = None) -> Frame:
    """Reads and validates one frame from an untrusted peer; any deviation raises ProtocolError or TimeoutError."""
    prefix = _read_exact(fd, 8, deadline)
    if prefix[:4] != MAGIC:
        raise ProtocolError("bad frame magic")
    size = int.from_bytes(prefix[4:], "big")
    if size > MAX_HEADER_BYTES:
        raise ProtocolError(f"frame header of {size} bytes exceeds {MAX_HEADER_BYTES}")
    try:
        head = json.loads(
            _read_exact(fd, size, deadline).decode("utf-8"),
            parse_constant=lambda c: (_ for _ in ()).throw(ProtocolError(f"{c} is not allowed")),
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ProtocolError(f"frame header is not JSON: {e}") from None
    if not isinstance(head, dict) or set(head) != {"kind", "meta", "tensors"}:
        raise ProtocolError("frame header must have exactly kind, meta, tensors")
    kind, meta, raw_tensors = head["kind"], head["meta"], head["tensors"]
    if kind not in kinds:
        raise ProtocolError(f"unexpected frame kind {kind!r} (expected one of {sorted(kinds)})")
    if not isinstance(meta, dict) or not isinstance(raw_tensors, list) or len(raw_tensors) > MAX_TENSORS:
        raise ProtocolError("frame meta must be an object and tensors a short list")
    headers = [TensorHeader.parse(t) for t in raw_tensors]
    if sum(h.nbytes for h in headers) > max_payload:
        raise ProtocolError(f"frame payload exceeds the {max_payload}-byte limit")
    return Frame(kind, meta, tuple((h, _read_exact(fd, h.nbytes, deadline)) for h in headers))


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        _wait(fd, select.POLLIN, deadline)
        try:
            chunk = os.read(fd, min(n - got, 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise ProtocolError("peer closed the channel")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _wait(fd: int, event: int, deadline: float | None) -> None:
    if deadline is None:
        return
    poller = select.poll()
    poller.register(fd, event)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed waiting on the channel")
        if poller.poll(min(left, 1.0) * 1000):
            return
