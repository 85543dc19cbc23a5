"""The miner's side: a deterministic archive of a bundle, the digest to commit and the reveal that opens it later."""

from __future__ import annotations

import os
import secrets

from pydantic import ValidationError

from ..bundle import Bundle, load_bundle, pack, unpack
from ..errors import InputError
from ..record import Record, first_error
from .payload import REVEAL_VERSION, Reveal, digest, encode


def package(bundle_dir: str | os.PathLike) -> tuple[Bundle, bytes]:
    """The bundle and its byte-reproducible archive; the archive is unpacked again so what ships is what validates."""
    bundle = load_bundle(bundle_dir)
    archive = pack(bundle)
    if unpack(archive).identity != bundle.identity:
        raise InputError("the packed archive does not reproduce the bundle identity")
    return bundle, archive


class Sealed(Record):
    """What a miner keeps between its commit and its reveal (`hotfloat chain submit` writes it, `hotfloat chain
    reveal` reads it); the salt is the secret, published only by the reveal."""

    netuid: int
    hotkey: str
    """The hotkey that commits and must reveal: the digest opens for it alone."""
    identity: str
    url: str
    salt: str
    payment: str | None = None
    commit_block: int | None = None
    """The block the digest landed in, as read back from the chain; None before the commit."""

    def reveal(self, commit_block: int | None = None) -> Reveal:
        c = self.commit_block if commit_block is None else commit_block
        return Reveal(v=REVEAL_VERSION, c=c or 0, h=self.identity, s=self.salt, u=self.url, p=self.payment)

    @property
    def digest(self) -> str:
        return digest(self.netuid, self.hotkey, self.reveal())


def seal(identity: str, url: str, netuid: int, hotkey: str, payment: str | None = None) -> Sealed:
    """A fresh salt for one commitment, refusing anything a validator would refuse."""
    sealed = Sealed(
        netuid=netuid, hotkey=hotkey, identity=identity, url=url, salt=secrets.token_hex(16), payment=payment
    )
    reveal_bytes(sealed, 0)
    return sealed


def reveal_bytes(sealed: Sealed, commit_block: int) -> bytes:
    """The canonical reveal for a digest committed at `commit_block`."""
    try:
        return encode(sealed.reveal(commit_block))
    except (ValidationError, ValueError) as e:
        msg = first_error(e) if isinstance(e, ValidationError) else str(e)
        raise InputError(f"commitment refused: {msg}") from None
