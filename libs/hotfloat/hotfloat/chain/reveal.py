"""Does a reveal open its commitment? Checked against the chain's own history, so a validator that was down when the
digest was committed judges the reveal the same.

The hotkey's commitment just before the reveal's block must be a digest committed at exactly the block the reveal
names, and the reveal must hash to it for this hotkey on this subnet; it must come at least `after` and at most
`within` blocks after the commit. Each refusal is one line with its code: a reveal of a digest already revealed
(replayed), of a digest another hotkey committed (someone else's), of nothing, of another digest, too early or too
late. `within` stays below the 256 blocks of state a non-archive subtensor node keeps, so the commit stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass

from .client import Chain, ChainCommitment
from .codes import Code
from .payload import Reveal, digest, parse_commit, parse_reveal


@dataclass(frozen=True)
class RevealPolicy:
    """The validator's reveal delay and window, in blocks after the commit."""

    after: int = 10
    """A digest must stand this long before its reveal: past finality, so the order of commits is settled before
    any archive is public."""
    within: int = 200
    """A reveal later than this is refused, and a digest older than this no longer holds later reveals back."""

    def __post_init__(self):
        if not 1 <= self.after <= self.within <= 250:
            raise ValueError(f"reveal policy needs 1 <= after <= within <= 250 blocks, not {self.after}/{self.within}")


class RevealRefused(Exception):
    """A reveal that does not open its commitment: the code and the one-line reason."""

    def __init__(self, code: Code, reason: str):
        super().__init__(reason)
        self.code, self.reason = code, reason


def check_reveal(chain: Chain, netuid: int, c: ChainCommitment, reveal: Reveal, policy: RevealPolicy) -> None:
    """Raises RevealRefused unless `c` (the reveal as read from the chain) opens this hotkey's digest in time."""
    before = chain.commitment_of(netuid, c.hotkey, c.block - 1)
    committed = parse_commit(before.data) if before is not None else None
    if committed is None or before.block != reveal.c:
        _not_this_hotkeys(chain, netuid, c, reveal, before)
    if committed != digest(netuid, c.hotkey, reveal):
        _foreign(chain, netuid, c, reveal)
        raise RevealRefused(
            Code.REVEAL_MISMATCH,
            f"reveal does not match its commitment: it hashes to {digest(netuid, c.hotkey, reveal)[:16]}..., the "
            f"digest committed at block {reveal.c} is {committed[:16]}...",
        )
    gap = c.block - reveal.c
    if gap < policy.after:
        raise RevealRefused(
            Code.REVEAL_EARLY,
            f"revealed too early: at block {c.block}, {gap} blocks after the commit at block {reveal.c}; this "
            f"validator takes reveals {policy.after} or more blocks after the commit",
        )
    if gap > policy.within:
        raise RevealRefused(
            Code.REVEAL_LATE,
            f"revealed too late: at block {c.block}, {gap} blocks after the commit at block {reveal.c}; this "
            f"validator takes reveals at most {policy.within} blocks after the commit",
        )


def _not_this_hotkeys(
    chain: Chain, netuid: int, c: ChainCommitment, reveal: Reveal, before: ChainCommitment | None
) -> None:
    """The hotkey held no digest committed at the named block just before the reveal: say what it held instead."""
    if before is not None:
        try:
            earlier = parse_reveal(before.data)
        except ValueError:
            earlier = None
        if earlier is not None and earlier.c == reveal.c:
            raise RevealRefused(
                Code.REVEAL_REPLAYED,
                f"replayed reveal: the digest committed at block {reveal.c} was already revealed at block {before.block}",
            )
    _foreign(chain, netuid, c, reveal)
    held = "nothing" if before is None else f"a commitment made at block {before.block}"
    if before is not None and parse_commit(before.data) is not None:
        held = f"a digest committed at block {before.block}"
    raise RevealRefused(
        Code.NO_COMMIT,
        f"no digest to reveal: the reveal names a commit at block {reveal.c}, and before block {c.block} this hotkey "
        f"held {held}",
    )


def _foreign(chain: Chain, netuid: int, c: ChainCommitment, reveal: Reveal) -> None:
    """Refuses a reveal that opens the digest another hotkey committed at the named block."""
    for other in chain.commitments(netuid, reveal.c) if reveal.c <= c.block else ():
        if other.hotkey != c.hotkey and other.block == reveal.c:
            if parse_commit(other.data) == digest(netuid, other.hotkey, reveal):
                raise RevealRefused(
                    Code.REVEAL_FOREIGN,
                    f"someone else's reveal: it opens the digest {other.hotkey} committed at block {reveal.c}",
                )
