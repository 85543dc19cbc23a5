"""The miner's side: a deterministic archive of a bundle and the exact commitment bytes that announce it."""

from __future__ import annotations

import os

from pydantic import ValidationError

from ..bundle import Bundle, load_bundle, pack, unpack
from ..errors import InputError
from ..record import first_error
from .payload import PAYLOAD_VERSION, Payload, encode_payload


def package(bundle_dir: str | os.PathLike) -> tuple[Bundle, bytes]:
    """The bundle and its byte-reproducible archive; the archive is unpacked again so what ships is what validates."""
    bundle = load_bundle(bundle_dir)
    archive = pack(bundle)
    if unpack(archive).identity != bundle.identity:
        raise InputError("the packed archive does not reproduce the bundle identity")
    return bundle, archive


def commitment(identity: str, url: str, payment: str | None = None) -> tuple[Payload, bytes]:
    """The payload record and its canonical bytes, refusing anything a validator would refuse."""
    try:
        payload = Payload(v=PAYLOAD_VERSION, h=identity, u=url, p=payment)
        return payload, encode_payload(payload)
    except (ValidationError, ValueError) as e:
        msg = first_error(e) if isinstance(e, ValidationError) else str(e)
        raise InputError(f"commitment refused: {msg}") from None
