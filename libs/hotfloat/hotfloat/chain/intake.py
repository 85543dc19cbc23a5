"""Validator intake: finalized reveals, in the order of the digests they open, become ledger submissions or refusals
with a code and a reason.

A miner commits a digest, then reveals the payload N blocks later (`payload.py`). A digest on chain is not yet
anything to decide. Each reveal is decided by these rules, in order: the hotkey must hold a uid; the payload must
parse (size, version, hash, salt, https URL); it must open this hotkey's digest, in the validator's window
(`reveal.py`); an identity goes to its first committer (a later commit of it by another hotkey is a duplicate, by the
same hotkey a replay); a fee payment reference pays for one commitment only; the archive is fetched under
`FetchPolicy` bounds and its recomputed identity must equal the committed one; the bundle must not copy the
reference library or any submission committed before it (`copy_check.py`).

Chain order is the commit block (then hotkey), and a reveal is decided only once every digest committed before it
has been decided, has expired unrevealed, or was replaced: so whoever committed first keeps the credit, and the copy
check has seen everything committed before. A transient fetch failure is retried on later runs, up to
`max_attempts`, and holds later reveals back meanwhile; any other fault while deciding one reveal is recorded against
it alone (bad input: refused; anything else: retried like a transient failure, then refused), and the intake goes on.

Each decision is one ledger transaction, written after the ledger has received the archive; receiving is idempotent
by identity, so a crash between the two only repeats the fetch on the next run and never enqueues twice.
"""

from __future__ import annotations

import hashlib
import json
import time
from enum import Enum

from ..errors import InputError
from ..ledger import Ledger
from ..record import Record
from .client import Chain, ChainCommitment
from .codes import Code
from .copy_check import check_copy, describe
from .fetch import FetchPolicy, FetchRefused, fetch_bundle
from .payload import PlainCommitment, parse_commit, parse_reveal
from .reveal import RevealPolicy, RevealRefused, check_reveal


class Outcome(str, Enum):
    """ACCEPTED went into the ledger; REFUSED is final; RETRY will be fetched again on a later run."""

    ACCEPTED = "accepted"
    REFUSED = "refused"
    RETRY = "retry"


class Decision(Record):
    """What the intake decided about one on-chain reveal, and why."""

    netuid: int
    hotkey: str
    uid: int | None
    block: int
    """Block the commitment (the reveal) was read at."""
    commit_block: int | None = None
    """Block of the digest the reveal opens: the chain order."""
    identity: str | None
    """Committed bundle identity, when the payload parsed."""
    url: str | None
    outcome: Outcome
    code: Code | None = None
    """Why it was refused (None while accepted or retried)."""
    reason: str
    submission_id: int | None = None
    """The ledger submission an accepted commitment became."""


def digest(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def run_intake(
    chain: Chain,
    ledger: Ledger,
    netuid: int,
    policy: FetchPolicy = FetchPolicy(),
    max_attempts: int = 3,
    reveals: RevealPolicy = RevealPolicy(),
) -> list[Decision]:
    """Decides every finalized reveal not decided before, oldest commit first; returns the new decisions."""
    finalized = chain.finalized()
    current = chain.commitments(netuid, finalized)
    pending = [
        (c.block, c.hotkey)
        for c in current
        if parse_commit(c.data) and c.uid is not None and c.block + reveals.within >= finalized
    ]  # digests that may still be revealed and taken: a reveal committed after one of them waits for it
    live = {(c.hotkey, c.block, digest(c.data)) for c in current}
    decisions = []
    for c in sorted((c for c in current if not parse_commit(c.data)), key=_order):
        row = _observation(ledger, netuid, c)
        if row is not None and row[0] != Outcome.RETRY.value:
            continue
        attempts = (row[1] if row else 0) + 1
        try:
            d = _decide(chain, ledger, netuid, c, policy, reveals, pending, live, attempts, max_attempts)
        except Exception as e:  # one commitment's fault never stops the others, and is never retried forever
            d = _fault(ledger, netuid, c, e, attempts, max_attempts)
        if d is not None:
            decisions.append(d)
    return decisions


def _order(c: ChainCommitment) -> tuple[int, str]:
    """A reveal's place in chain order: the block its digest was committed at (its own block if it names none)."""
    try:
        return parse_reveal(c.data).c, c.hotkey
    except ValueError:
        return c.block, c.hotkey


def _decide(
    chain: Chain,
    ledger: Ledger,
    netuid: int,
    c: ChainCommitment,
    policy: FetchPolicy,
    reveals: RevealPolicy,
    pending: list[tuple[int, str]],
    live: set[tuple[str, int, str]],
    attempts: int,
    max_attempts: int,
) -> Decision | None:
    refs: dict = {}

    def done(outcome: Outcome, reason: str, code: Code | None = None, *, payment=None, sid=None, evidence=None):
        where = {"identity": None, "url": None, **refs}
        d = Decision(
            netuid=netuid,
            hotkey=c.hotkey,
            uid=c.uid,
            block=c.block,
            outcome=outcome,
            code=code,
            **where,
            reason=reason,
            submission_id=sid,
        )
        _record(ledger, d, digest(c.data), payment if outcome is Outcome.ACCEPTED else None, attempts, evidence)
        return d

    if c.uid is None:
        return done(Outcome.REFUSED, "hotkey is not registered on the subnet", Code.NOT_REGISTERED)
    try:
        p = parse_reveal(c.data)
    except PlainCommitment as e:
        return done(Outcome.REFUSED, str(e), Code.PLAIN_COMMITMENT)
    except ValueError as e:
        return done(Outcome.REFUSED, str(e), Code.MALFORMED)
    refs = {"identity": p.h, "url": p.u, "commit_block": p.c}
    try:
        check_reveal(chain, netuid, c, p, reveals)
    except RevealRefused as e:
        return done(Outcome.REFUSED, e.reason, e.code)
    first = (p.c, c.hotkey)
    if any(other < first for other in pending):
        return None  # a digest committed before this one may still be revealed: it comes first
    with ledger.transaction() as db:
        owner = db.execute(
            "SELECT hotkey, COALESCE(commit_block, block) FROM chain_observations WHERE netuid = ? AND identity = ?"
            " AND status = ?",
            (netuid, p.h, Outcome.ACCEPTED.value),
        ).fetchone()
        retried = db.execute(
            "SELECT hotkey, block, digest FROM chain_observations WHERE netuid = ? AND status = ? AND"
            " (COALESCE(commit_block, block) < ? OR (COALESCE(commit_block, block) = ? AND hotkey < ?))",
            (netuid, Outcome.RETRY.value, p.c, p.c, c.hotkey),
        ).fetchall()
        paid = (
            p.p
            and db.execute(
                "SELECT hotkey FROM chain_observations WHERE netuid = ? AND payment = ? AND status = ?",
                (netuid, p.p, Outcome.ACCEPTED.value),
            ).fetchone()
        )
    if owner and owner[0] != c.hotkey:
        return done(
            Outcome.REFUSED,
            f"duplicate identity: first committed by {owner[0]} at block {owner[1]}",
            Code.DUPLICATE_IDENTITY,
        )
    if owner:
        return done(
            Outcome.REFUSED, f"replay: this hotkey's identity was already accepted at block {owner[1]}", Code.REPLAY
        )
    if any(tuple(row) in live for row in retried):
        return None  # an earlier reveal is being fetched again (one replaced on chain since holds nothing back)
    if paid:
        return done(
            Outcome.REFUSED, f"replay: payment reference {p.p} already paid for {paid[0]}'s commitment", Code.REPLAY
        )
    try:
        archive, bundle = fetch_bundle(p.u, p.h, policy)
    except FetchRefused as e:
        if e.transient and attempts < max_attempts:
            return done(Outcome.RETRY, f"{e.reason} (attempt {attempts} of {max_attempts})")
        return done(Outcome.REFUSED, e.reason, Code.FETCH_REFUSED)
    try:
        check = check_copy(ledger, netuid, bundle, p.c, c.hotkey)
    except InputError as e:
        return done(Outcome.REFUSED, str(e), Code.UNCOMPARABLE)
    evidence = check.model_dump(mode="json")
    if check.copied is not None:
        code, reason = describe(check, ledger, netuid)
        return done(Outcome.REFUSED, reason, code, evidence=evidence)
    sub, created = ledger.receive(archive, submitter=c.hotkey, source=f"chain:{netuid}:{p.c}:{p.u}")
    if not created and sub.submitter != c.hotkey:
        return done(
            Outcome.REFUSED,
            f"duplicate identity: the ledger already holds it from {sub.submitter or sub.source}",
            Code.DUPLICATE_IDENTITY,
        )
    why = "fetched, identity verified, no copy found, enqueued"
    return done(Outcome.ACCEPTED, why, payment=p.p, sid=sub.id, evidence=evidence)


def _fault(ledger: Ledger, netuid: int, c: ChainCommitment, e: Exception, attempts: int, max_attempts: int) -> Decision:
    """A commitment whose decision raised: refused at once when its input is to blame, otherwise tried again on
    later runs and refused after `max_attempts`, so a poisoned commitment is decided exactly once."""
    try:
        p = parse_reveal(c.data)
        refs = {"identity": p.h, "url": p.u, "commit_block": p.c}
    except ValueError:
        refs = {"identity": None, "url": None}
    reason = f"{type(e).__name__}: {e}"[:500]
    code: Code | None = Code.FETCH_REFUSED if isinstance(e, InputError) else None
    if isinstance(e, InputError):
        outcome = Outcome.REFUSED
    elif attempts < max_attempts:
        outcome, reason = Outcome.RETRY, f"fault while deciding: {reason} (attempt {attempts} of {max_attempts})"
    else:
        outcome, code, reason = Outcome.REFUSED, Code.FAULT, f"fault while deciding, {attempts} attempts: {reason}"
    d = Decision(
        netuid=netuid, hotkey=c.hotkey, uid=c.uid, block=c.block, outcome=outcome, code=code, reason=reason, **refs
    )
    _record(ledger, d, digest(c.data), None, attempts, None)
    return d


def _observation(ledger: Ledger, netuid: int, c: ChainCommitment) -> tuple[str, int] | None:
    with ledger.transaction() as db:
        return db.execute(
            "SELECT status, attempts FROM chain_observations WHERE netuid = ? AND hotkey = ? AND block = ?"
            " AND digest = ?",
            (netuid, c.hotkey, c.block, digest(c.data)),
        ).fetchone()


def _record(ledger: Ledger, d: Decision, data_digest: str, payment: str | None, attempts: int, evidence) -> None:
    with ledger.transaction() as db:
        db.execute(
            "INSERT INTO chain_observations (netuid, hotkey, block, digest, uid, identity, url, payment, status, reason,"
            " attempts, submission_id, decided_at, commit_block, code, evidence)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (netuid, hotkey, block, digest) DO UPDATE SET status = excluded.status,"
            " reason = excluded.reason, attempts = excluded.attempts, payment = excluded.payment,"
            " submission_id = excluded.submission_id, decided_at = excluded.decided_at, code = excluded.code,"
            " evidence = excluded.evidence",
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
                d.commit_block,
                d.code.value if d.code else "",
                None if evidence is None else json.dumps(evidence, sort_keys=True),
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
