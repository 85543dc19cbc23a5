"""The on-chain commitment payload: compact, versioned, size-bounded JSON naming a bundle identity and its HTTPS origin.

The chain stores bytes, so everything read back is untrusted: `parse_payload` accepts exactly one canonical form and
says why it refuses anything else. The canonical form is also what `encode_payload` writes, so a miner's dry run shows
byte for byte what a validator will parse.
"""

from __future__ import annotations

import json
import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, ValidationError, field_validator

from ..record import Record, first_error

MAX_PAYLOAD_BYTES = 1024
MAX_URL_CHARS = 512
RAW_FIELD_BYTES = 128
PAYLOAD_VERSION = 1
_HOST_RE = re.compile(r"^[A-Za-z0-9.-]{1,253}$")


class Payload(Record):
    """What a miner commits: `{"v":1,"h":<bundle identity>,"u":<https url>}` plus an optional fee payment reference."""

    model_config = ConfigDict(strict=True)

    v: Annotated[int, Field(ge=PAYLOAD_VERSION, le=PAYLOAD_VERSION)]
    """Payload format version; only 1 exists."""
    h: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """The bundle's canonical identity (lower-case hex SHA-256)."""
    u: Annotated[str, Field(min_length=9, max_length=MAX_URL_CHARS)]
    """HTTPS URL of the deterministic bundle archive."""
    p: Annotated[str, Field(pattern=r"^[0-9]{1,12}-[0-9]{4}$")] | None = None
    """Optional fee payment reference: the paying extrinsic as `<block>-<index>`."""

    @field_validator("u")
    @classmethod
    def _https_only(cls, v: str) -> str:
        return check_url(v)


def check_url(url: str) -> str:
    """An absolute https URL with a plain host, no credentials and no fragment; the only origin a validator fetches."""
    if not url.isascii() or any(c.isspace() or ord(c) < 0x21 for c in url):
        raise ValueError("url must be printable ASCII without spaces")
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise ValueError("url must use https")
    if not parts.hostname or not _HOST_RE.match(parts.hostname) or "@" in parts.netloc or parts.fragment:
        raise ValueError("url must name a plain host, without credentials or fragment")
    try:
        _ = parts.port  # parsing the port is what may fail
    except ValueError:
        raise ValueError("url has an invalid port") from None
    return url


def encode_payload(payload: Payload) -> bytes:
    """Canonical bytes: keys in fixed order, no whitespace, optional keys omitted; refused above the size bound."""
    raw = json.dumps(payload.model_dump(exclude_none=True), separators=(",", ":"), sort_keys=True).encode()
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"payload is {len(raw)} bytes, over the {MAX_PAYLOAD_BYTES}-byte limit")
    return raw


def parse_payload(raw: str | bytes) -> Payload:
    """Parses committed bytes; raises ValueError with the refusal reason for oversize, malformed or non-canonical data."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if len(data) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"oversize payload ({len(data)} bytes > {MAX_PAYLOAD_BYTES})")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError("malformed payload (not UTF-8 JSON)") from None
    if not isinstance(obj, dict):
        raise ValueError("malformed payload (not a JSON object)")
    try:
        payload = Payload.model_validate(obj)
    except ValidationError as e:
        raise ValueError(f"malformed payload ({first_error(e, 'payload')})") from None
    if encode_payload(payload) != data:
        raise ValueError("non-canonical payload (re-encode differs: key order, spacing or duplicate keys)")
    return payload


def to_fields(raw: bytes) -> list[dict[str, str]]:
    """Splits payload bytes into the Commitments pallet's `Raw<N>` data fields (at most 128 bytes each)."""
    chunks = [raw[i : i + RAW_FIELD_BYTES] for i in range(0, len(raw), RAW_FIELD_BYTES)]
    return [{f"Raw{len(c)}": "0x" + c.hex()} for c in chunks]
