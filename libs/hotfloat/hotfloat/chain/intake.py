"""Validator intake: finalized commitments, in chain order, become ledger submissions or refusals with a reason.

Rules, in order: the committing hotkey must hold a uid; the payload must parse (size, version, hash, https URL);
an identity goes to its first committer in chain order (a later commitment of it by another hotkey is a duplicate,
by the same hotkey a replay), and is only decided once every earlier commitment of it is decided; a fee payment
reference pays for one commitment only; the archive is fetched under `FetchPolicy` bounds and its recomputed identity
must equal the committed one. A transient fetch failure is retried on later runs, up to `max_attempts`. Any other
fault while deciding one commitment is recorded against that commitment alone (bad input: refused; anything else:
retried like a transient failure, then refused), and the intake goes on to the next.

Each decision is one ledger transaction, written after the ledger has received the archive; receiving is idempotent
by identity, so a crash between the two only repeats the fetch on the next run and never enqueues twice.
"""

from __future__ import annotations

import hashlib
import time
from enum import Enum

from ..errors import InputError
from ..ledger import Ledger
from ..record import Record
from .client import Chain, ChainCommitment
from .fetch import FetchPolicy, FetchRefused, fetch_bundle
from .payload import parse_payload


class Outcome(str, Enum):
    """ACCEPTED went into the ledger; REFUSED is final; RETRY will be fetched again on a later run."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    RETRY = "retry"


class Decision(Record):
    """What the intake decided about one on-chain commitment, and why."""

    netuid: int
    hotkey: str
    uid: int | None
    block: int
    """Block the commitment was made at."""
    identity: str | None
    """Committed bundle identity, when the payload parsed."""
    url: str | None
    outcome: Outcome
    reason: str
    submission_id: int | None = None
    """The ledger submission an accepted commitment became."""


def digest(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def run_intake(
    chain: Chain, ledger: Ledger, netuid: int, policy: FetchPolicy = FetchPolicy(), max_attempts: int = 3
) -> list[Decision]:
    """Decides every finalized commitment not decided before; returns the new decisions in chain order."""
    decisions = []
    for c in chain.commitments(netuid, chain.finalized()):
        row = _observation(ledger, netuid, c)
        if row is not None and row[0] != Outcome.RETRY.value:
            continue
        attempts = (row[1] if row else 0) + 1
        try:
            d = _decide(ledger, netuid, c, policy, attempts=attempts, max_attempts=max_attempts)
        except Exception as e:  # one commitment's fault never stops the others, and is never retried forever
            d = _fault(ledger, netuid, c, e, attempts, max_attempts)
        if d is not None:
            decisions.append(d)
    return decisions


def _decide(
    ledger: Ledger, netuid: int, c: ChainCommitment, policy: FetchPolicy, attempts: int, max_attempts: int
) -> Decision | None:
    def done(outcome: Outcome, reason: str, *, identity=None, url=None, payment=None, sid=None) -> Decision:
        d = Decision(
            netuid=netuid,
            hotkey=c.hotkey,
            uid=c.uid,
            block=c.block,
            identity=identity,
            url=url,
            outcome=outcome,
            reason=reason,
            submission_id=sid,
        )
        _record(ledger, d, digest(c.data), payment if outcome is Outcome.ACCEPTED else None, attempts)
        return d

    if c.uid is None:
        return done(Outcome.REFUSED, "hotkey is not registered on the subnet")
    try:
        p = parse_payload(c.data)
    except ValueError as e:
        return done(Outcome.REFUSED, str(e))
    refs = {"identity": p.h, "url": p.u}
    with ledger.transaction() as db:
        owner = db.execute(
            "SELECT hotkey, block FROM chain_observations WHERE netuid = ? AND identity = ? AND status = ?",
            (netuid, p.h, Outcome.ACCEPTED.value),
        ).fetchone()
        earlier = db.execute(
            "SELECT 1 FROM chain_observations WHERE netuid = ? AND identity = ? AND status = ? AND "
            "(block < ? OR (block = ? AND hotkey < ?))",
            (netuid, p.h, Outcome.RETRY.value, c.block, c.block, c.hotkey),
        ).fetchone()
        paid = (
            p.p
            and db.execute(
                "SELECT hotkey FROM chain_observations WHERE netuid = ? AND payment = ? AND status = ?",
                (netuid, p.p, Outcome.ACCEPTED.value),
            ).fetchone()
        )
    if owner and owner[0] != c.hotkey:
        return done(Outcome.REFUSED, f"duplicate identity: first committed by {owner[0]} at block {owner[1]}", **refs)
    if owner:
        return done(Outcome.REFUSED, f"replay: this hotkey's identity was already accepted at block {owner[1]}", **refs)
    if earlier:
        return None
    if paid:
        return done(Outcome.REFUSED, f"replay: payment reference {p.p} already paid for {paid[0]}'s commitment", **refs)
    try:
        archive, _bundle = fetch_bundle(p.u, p.h, policy)
    except FetchRefused as e:
        if e.transient and attempts < max_attempts:
            return done(Outcome.RETRY, f"{e.reason} (attempt {attempts} of {max_attempts})", **refs)
        return done(Outcome.REFUSED, e.reason, **refs)
    sub, created = ledger.receive(archive, submitter=c.hotkey, source=f"chain:{netuid}:{c.block}:{p.u}")
    if not created and sub.submitter != c.hotkey:
        return done(
            Outcome.REFUSED,
            f"duplicate identity: the ledger already holds it from {sub.submitter or sub.source}",
            **refs,
        )
    return done(Outcome.ACCEPTED, "fetched, identity verified, enqueued", payment=p.p, sid=sub.id, **refs)


def _fault(ledger: Ledger, netuid: int, c: ChainCommitment, e: Exception, attempts: int, max_attempts: int) -> Decision:
    """A commitment whose decision raised: refused at once when its input is to blame, otherwise tried again on
    later runs and refused after `max_attempts`, so a poisoned commitment is decided exactly once."""
    try:
        p = parse_payload(c.data)
        refs = {"identity": p.h, "url": p.u}
    except ValueError:
        refs = {"identity": None, "url": None}
    reason = f"{type(e).__name__}: {e}"[:500]
    if isinstance(e, InputError):
        outcome = Outcome.REFUSED
    elif attempts < max_attempts:
        outcome, reason = Outcome.RETRY, f"fault while deciding: {reason} (attempt {attempts} of {max_attempts})"
    else:
        outcome, reason = Outcome.REFUSED, f"fault while deciding, {attempts} attempts: {reason}"
    d = Decision(netuid=netuid, hotkey=c.hotkey, uid=c.uid, block=c.block, outcome=outcome, reason=reason, **refs)
    _record(ledger, d, digest(c.data), None, attempts)
    return d


def _observation(ledger: Ledger, netuid: int, c: ChainCommitment) -> tuple[str, int] | None:
    with ledger.transaction() as db:
        return db.execute(
            "SELECT status, attempts FROM chain_observations WHERE netuid = ? AND hotkey = ? AND block = ?"
            " AND digest = ?",
            (netuid, c.hotkey, c.block, digest(c.data)),
        ).fetchone()


def _record(ledger: Ledger, d: Decision, data_digest: str, payment: str | None, attempts: int) -> None:
    with ledger.transaction() as db:
        db.execute(
            "INSERT INTO chain_observations (netuid, hotkey, block, digest, uid, identity, url, payment, status, reason,"
            " attempts, submission_id, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (netuid, hotkey, block, digest) DO UPDATE SET status = excluded.status,"
            " reason = excluded.reason, attempts = excluded.attempts, payment = excluded.payment,"
            " submission_id = excluded.submission_id, decided_at = excluded.decided_at",
            (
                d.netuid,
                d.hotkey,
                d.block,
                data_digest,
                d.uid,
                d.identity,
                d.url,
                payment,
                d.outcome.value,
                d.reason,
                attempts,
                d.submission_id,
                time.time(),
            ),
        )


def observations(ledger: Ledger, netuid: int) -> dict[tuple[str, int, str], tuple[str, str, int | None]]:
    """(hotkey, block, digest) -> (status, reason, submission id) for every decided commitment of the subnet."""
    with ledger.transaction() as db:
        rows = db.execute(
            "SELECT hotkey, block, digest, status, reason, submission_id FROM chain_observations WHERE netuid = ?",
            (netuid,),
        ).fetchall()
    return {(h, b, g): (s, r, sid) for h, b, g, s, r, sid in rows}


def owners(ledger: Ledger, netuid: int) -> dict[str, str]:
    """Bundle identity -> the hotkey whose commitment of it was accepted (who gets paid for it)."""
    with ledger.transaction() as db:
        rows = db.execute(
            "SELECT identity, hotkey FROM chain_observations WHERE netuid = ? AND status = ?",
            (netuid, Outcome.ACCEPTED.value),
        ).fetchall()
    return dict(rows)
