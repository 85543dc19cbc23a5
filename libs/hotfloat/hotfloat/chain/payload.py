"""The commitment payloads: a digest committed first, then the reveal that opens it; compact, bounded, canonical JSON.

A miner commits `sha256(binding)` in the Commitments pallet's own hash field (`Sha256`), which shows nothing of the
bundle or its origin; N blocks later it reveals `{"c":<commit block>,"h":<identity>,"s":<salt>,"u":<https url>,
"v":2}` (plus `"p"`, a fee payment reference) as `Raw<N>` fields. The binding is the reveal without `c`, prefixed by
the subnet and the committing hotkey, so a digest opens for one hotkey on one subnet only: a reveal copied from
someone else matches nothing of the copier's, and the 128-bit salt keeps a digest from being guessed from a known
bundle. The chain stores bytes, so everything read back is untrusted: `parse_reveal` accepts exactly one canonical
form and says why it refuses anything else; the canonical form is also what `encode` writes, so a miner's dry run
shows byte for byte what a validator will parse.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, ValidationError, field_validator

from ..record import Record, first_error

MAX_PAYLOAD_BYTES = 1024
MAX_URL_CHARS = 512
RAW_FIELD_BYTES = 128
REVEAL_VERSION = 2
COMMIT_PREFIX = "sha256:0x"
"""How the SDK reads a `Sha256` commitment field back (`NeuronCommitment.data`)."""
_HOST_RE = re.compile(r"^[A-Za-z0-9.-]{1,253}$")
_COMMIT_RE = re.compile(r"^sha256:0x([0-9a-f]{64})$")


class Reveal(Record):
    """What a miner reveals once its digest has stood for N blocks."""

    model_config = ConfigDict(strict=True)

    v: Annotated[int, Field(ge=REVEAL_VERSION, le=REVEAL_VERSION)]
    """Payload format version; 2 is the reveal (1, a URL committed in the clear, is refused)."""
    c: Annotated[int, Field(ge=0, le=10**12)]
    """The block the digest this reveal opens was committed at (intake orders by it)."""
    h: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """The bundle's canonical identity (lower-case hex SHA-256)."""
    s: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]
    """The salt: 128 secret bits, published only in the reveal."""
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


def _canonical(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def encode(reveal: Reveal) -> bytes:
    """Canonical bytes: keys in fixed order, no whitespace, optional keys omitted; refused above the size bound."""
    raw = _canonical(reveal.model_dump(exclude_none=True))
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"payload is {len(raw)} bytes, over the {MAX_PAYLOAD_BYTES}-byte limit")
    return raw


def digest(netuid: int, hotkey: str, reveal: Reveal) -> str:
    """The digest a miner commits: SHA-256 over the subnet, the hotkey and the reveal without its commit block."""
    bound = _canonical(reveal.model_dump(exclude_none=True, exclude={"c"}))
    return hashlib.sha256(b"hotfloat-commit\x00%d\x00%s\x00" % (netuid, hotkey.encode()) + bound).hexdigest()


def commit_fields(digest_hex: str) -> list[dict[str, str]]:
    """The commitment that stands for a digest: one `Sha256` field of the Commitments pallet."""
    return [{"Sha256": "0x" + digest_hex}]


def parse_commit(data: str) -> str | None:
    """The digest a commitment read back holds, or None when it is not a digest commitment."""
    m = _COMMIT_RE.match(data)
    return m.group(1) if m else None


def parse_reveal(raw: str | bytes) -> Reveal:
    """Parses committed bytes; raises ValueError with the refusal reason for oversize, malformed, non-canonical or
    plain (version 1) payloads."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if len(data) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"oversize payload ({len(data)} bytes > {MAX_PAYLOAD_BYTES})")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError("malformed payload (not UTF-8 JSON)") from None
    if not isinstance(obj, dict):
        raise ValueError("malformed payload (not a JSON object)")
    if obj.get("v") == 1 and "c" not in obj:
        raise PlainCommitment(
            "plain commitment: its URL was public the block it was committed; commit a digest first "
            "(`hotfloat chain submit`), then reveal it (`hotfloat chain reveal`)"
        )
    try:
        reveal = Reveal.model_validate(obj)
    except ValidationError as e:
        raise ValueError(f"malformed payload ({first_error(e, 'payload')})") from None
    if encode(reveal) != data:
        raise ValueError("non-canonical payload (re-encode differs: key order, spacing or duplicate keys)")
    return reveal


class PlainCommitment(ValueError):
    """A version-1 payload: the archive's URL committed in the clear, which anyone could copy that block."""


def to_fields(raw: bytes) -> list[dict[str, str]]:
    """Splits payload bytes into the Commitments pallet's `Raw<N>` data fields (at most 128 bytes each)."""
    chunks = [raw[i : i + RAW_FIELD_BYTES] for i in range(0, len(raw), RAW_FIELD_BYTES)]
    return [{f"Raw{len(c)}": "0x" + c.hex()} for c in chunks]
