"""The one decoder of what an engine sends: every message is exactly one of these records or a protocol violation.

Engine bytes are untrusted (the candidate's code runs in the C engine and can write to its channel). Each message is
checked against a strict record (no extra keys, no type coercion, bounded sizes), so a forged frame is refused as
the engine's own fault with one sentence, and nothing it sends can raise anything else in the validator (a 401-digit
"logprob" once did: OverflowError, reported as an internal fault and retried).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from ..record import Record, first_error

Token = Annotated[StrictInt, Field(ge=0, lt=1 << 31)]
Count = Annotated[StrictInt, Field(ge=0, lt=1 << 53)]
Name = Annotated[StrictStr, Field(max_length=100)]


def _float(v):
    """Engines write every logprob with a decimal point (json.dumps of a float); an integer there was forged."""
    if type(v) is not float:
        raise ValueError(f"expected a JSON float, got {type(v).__name__}")
    return v


Float = Annotated[float, BeforeValidator(_float)]


class _Message(Record):
    model_config = ConfigDict(strict=True)


class Ready(_Message):
    """Built, armed, warmed up: the engine's identity and what it says about itself."""

    type: Literal["ready"]
    identity: Annotated[StrictStr, Field(max_length=200)]
    info: Annotated[dict[Name, Annotated[StrictStr, Field(max_length=500)]], Field(max_length=64)]


class Done(_Message):
    """One request's greedy completion; NaN logprobs pass here and fail at the gate, where they are judged."""

    type: Literal["done"]
    i: Annotated[StrictInt, Field(ge=0, lt=4096)]
    tokens: Annotated[list[Token], Field(max_length=4096)]
    logprobs: Annotated[list[Float], Field(max_length=4096)]
    margins: Annotated[list[Float], Field(max_length=4096)]


class Counts(_Message):
    """Seam calls per slot that went to the armed bundle and to stock."""

    type: Literal["counts"]
    routed: Annotated[dict[Name, Count], Field(max_length=64)]
    stock: Annotated[dict[Name, Count], Field(max_length=64)]


class Twin(_Message):
    """The twin engine perturbs exactly these slots now."""

    type: Literal["twin"]
    slots: Annotated[list[Name], Field(max_length=64)]


class Error(_Message):
    """The engine raised; the worker truncates its message to 2000 characters, so a longer one is forged."""

    type: Literal["error"]
    message: Annotated[StrictStr, Field(max_length=2000)]


MAX_PART_CHARS = 4 << 20
"""Base64 characters of one audit part's data at most (wire.MAX_MESSAGE bounds the whole message anyway)."""
MAX_PARTS = 256
"""Parts of one round's audit reply at most (2.5 MiB of entries each)."""
Dims = Annotated[dict[Name, Annotated[StrictInt, Field(ge=0, le=1 << 24)]], Field(max_length=12)]
Scalars = Annotated[dict[Name, StrictFloat], Field(max_length=8)]


class AuditStratum(_Message):
    """One stratum of an audited slot (its sizes, dtype and scalars) in one round: its calls, whether the bundle
    served them, how many entries the round kept."""

    slot: Name
    dims: Dims
    dtype: Literal["bf16", "fp16", "fp32"]
    scalars: Scalars
    calls: Count
    routed: StrictBool
    kept: Annotated[StrictInt, Field(ge=0, le=1024)]


class AuditEntry(_Message):
    """One kept execution: its stratum, whether the bundle served it, its MAC, the MAC its input words had when read
    again after the call (the recheck), and where its sealed words lie."""

    slot: Name
    dims: Dims
    dtype: Literal["bf16", "fp16", "fp32"]
    scalars: Scalars
    execution: Annotated[StrictInt, Field(ge=1, lt=1 << 32)]
    routed: StrictBool
    mac: Annotated[StrictStr, Field(pattern=r"^[0-9]{1,20}$")]
    recheck: Annotated[StrictStr, Field(pattern=r"^[0-9]{1,20}$")]
    offset: Annotated[StrictInt, Field(ge=0, le=MAX_PART_CHARS)]
    """Byte offset of the entry's words in the part's data."""
    words: Annotated[StrictInt, Field(ge=1, le=MAX_PART_CHARS // 8)]


class AuditPart(_Message):
    """An engine's reply to `{"op": "audit"}` after a round, in parts of at most a few MiB: the round's strata (in
    part 0), its kept entries and their sealed words in `data`."""

    type: Literal["audit"]
    round: Annotated[StrictInt, Field(ge=-1, lt=1 << 16)]
    part: Annotated[StrictInt, Field(ge=0, lt=MAX_PARTS)]
    parts: Annotated[StrictInt, Field(ge=1, le=MAX_PARTS)]
    strata: Annotated[list[AuditStratum], Field(max_length=4096)] = []
    unaudited: Annotated[dict[Name, Count], Field(max_length=64)] = {}
    error: Annotated[StrictStr, Field(max_length=500)] | None = None
    entries: Annotated[list[AuditEntry], Field(max_length=4096)]
    data: Annotated[StrictStr, Field(max_length=MAX_PART_CHARS)]


KINDS: dict[str, type[_Message]] = {
    "ready": Ready,
    "done": Done,
    "counts": Counts,
    "twin": Twin,
    "audit": AuditPart,
    "error": Error,
}
_ADAPTERS = {k: TypeAdapter(v) for k, v in KINDS.items()}


class Violation(Exception):
    """The message is not exactly the protocol."""


def decode(msg: dict, *expected: str) -> _Message:
    """The typed message; `expected` names the kinds due now (an error report is always accepted)."""
    kind = msg.get("type")
    if not isinstance(kind, str) or kind not in KINDS:
        raise Violation(f"sent a message of unknown type {str(kind)[:50]!r}")
    if kind != "error" and kind not in expected:
        raise Violation(f"sent {kind!r} where {' or '.join(map(repr, expected))} was due")
    try:
        return _ADAPTERS[kind].validate_python(msg)
    except ValidationError as e:
        raise Violation(f"sent a malformed {kind!r} message: {first_error(e, kind)}") from None
