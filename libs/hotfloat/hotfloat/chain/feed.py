"""The miners' report: every decided submission of a subnet as one JSON feed, signed by the validator's hotkey.

Miners otherwise see nothing of why they failed: the reasons live in the validator's ledger. Each entry carries the
stage that decided, the reason code (`codes.Code`, a closed list), the one-line reason, the SHA-256 of the evidence
the decision rests on (the ledger's stored JSON: the stage's record, or the copy check's, or the committed bytes), the
scores, and the secrets the run drew (verify's seed, the qualification's workload seeds), which the feed publishes only
once the submission is decided, since a secret of a run still going would let its author tune against it. Only
decided submissions are in it: reveals refused at intake, and taken-in bundles in a final state.

The signature is sr25519 by the validator hotkey over the feed's canonical JSON, so a miner checks it against the
hotkey the metagraph lists for the validator (`hotfloat chain report`), whoever served the bytes.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from ..errors import InputError
from ..ledger import Ledger, State
from ..ledger.records import NEXT
from ..record import Record, first_error
from .codes import STAGE_FAILURES, Code

Stage = Literal["intake", "copies", "scan", "build", "admit", "qualify", "score"]
MAX_REASON = 500
FEED_VERSION = 1


class Scores(Record):
    """What the qualifications measured."""

    settled: float | None = None
    """The score a scored submission was settled at (the lower of its two runs)."""
    runs: list[float] = Field(default_factory=list)
    """Each qualification's score, in order (0 unless it passed)."""


class Entry(Record):
    """One decided submission."""

    hotkey: str
    identity: str | None
    commit_block: int | None
    """The block of the digest it revealed: its place in chain order."""
    revealed_at: int
    """The block of the reveal the intake decided."""
    stage: Stage
    code: Code
    reason: Annotated[str, Field(max_length=MAX_REASON)]
    """One line, for people."""
    evidence: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """SHA-256 of the evidence the decision rests on, as the validator's ledger stores it."""
    scores: Scores | None = None
    secrets: dict[str, int] = Field(default_factory=dict)
    """The secrets its run drew, published because they are spent: `verify_seed`, `workload_seed_<n>`."""
    decided_at: float


class Feed(Record):
    """Everything one validator decided on one subnet."""

    version: Literal[1] = FEED_VERSION
    validator: str
    """The ss58 hotkey that signs the feed."""
    netuid: int
    built_at: float
    entries: list[Entry]


class SignedFeed(Record):
    """What is served: the feed's canonical JSON and the validator hotkey's signature over those bytes."""

    feed: str
    signature: Annotated[str, Field(pattern=r"^0x[0-9a-f]{128}$")]


def canonical(feed: Feed) -> bytes:
    return json.dumps(feed.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode()


def sign(feed: Feed, keypair) -> bytes:
    """The served bytes: `{"feed": ..., "signature": ...}`, signed by `keypair` (the validator's hotkey)."""
    data = canonical(feed)
    signed = SignedFeed(feed=data.decode(), signature="0x" + bytes(keypair.sign(data)).hex())
    return signed.model_dump_json().encode()


def verify(raw: bytes, validator: str) -> Feed:
    """The feed in `raw`, once its signature verifies against `validator`; InputError with the one reason otherwise."""
    from bittensor.keyfiles import Keypair

    try:
        signed = SignedFeed.model_validate_json(raw)
    except ValidationError as e:
        raise InputError(f"not a signed feed ({first_error(e, 'feed')})") from None
    try:
        ok = Keypair(ss58_address=validator).verify(signed.feed.encode(), bytes.fromhex(signed.signature[2:]))
    except ValueError as e:
        raise InputError(f"--validator {validator!r} is not an ss58 address ({e})") from None
    if not ok:
        raise InputError(f"the feed's signature does not verify against {validator}: altered, or signed by another key")
    try:
        feed = Feed.model_validate_json(signed.feed)
    except ValidationError as e:
        raise InputError(f"the signed feed is malformed ({first_error(e, 'feed')})") from None
    if feed.validator != validator:
        raise InputError(f"the feed names validator {feed.validator}, not {validator}")
    return feed


def build(ledger: Ledger, netuid: int, validator: str) -> Feed:
    """Every decided submission of the subnet, in chain order."""
    with ledger.transaction() as db:
        rows = db.execute(
            "SELECT hotkey, identity, commit_block, block, status, code, reason, digest, evidence, submission_id,"
            " decided_at FROM chain_observations WHERE netuid = ? AND status != 'retry'"
            " ORDER BY COALESCE(commit_block, block), hotkey",
            (netuid,),
        ).fetchall()
    entries = []
    for hotkey, identity, commit, block, status, code, reason, data_digest, evidence, sid, at in rows:
        where = {"hotkey": hotkey, "identity": identity, "commit_block": commit, "revealed_at": block}
        if status == "refused":
            stage = "copies" if code in (Code.COPY_OF.value, Code.COPY_OF_REFERENCE.value) else "intake"
            proof = hashlib.sha256(evidence.encode()).hexdigest() if evidence else data_digest
            entries.append(
                Entry(**where, stage=stage, code=Code(code), reason=_line(reason), evidence=proof, decided_at=at)
            )
        elif sid is not None and (decided := _decided(ledger, sid)) is not None:
            entries.append(Entry(**where, **decided))
    return Feed(validator=validator, netuid=netuid, built_at=time.time(), entries=entries)


def _line(reason: str) -> str:
    first = " ".join(reason.split())
    return first if len(first) <= MAX_REASON else first[: MAX_REASON - 3] + "..."


def _decided(ledger: Ledger, sid: int) -> dict | None:
    """The entry fields of a taken-in submission in a final state (None while it is still being judged)."""
    sub = ledger.get(sid)
    if not sub.state.final:
        return None
    with ledger.transaction() as db:
        trail = db.execute(
            "SELECT from_state, to_state, evidence, at FROM transitions WHERE submission_id = ? ORDER BY id", (sid,)
        ).fetchall()
        settled = db.execute("SELECT score FROM scores WHERE submission_id = ?", (sid,)).fetchone()
    last_from, _, last_evidence, at = trail[-1]
    stage = NEXT[State(last_from)][0]
    code = {State.SCORED: Code.SCORED, State.NO_DECISION: Code.NO_DECISION}.get(sub.state, STAGE_FAILURES[stage])
    secrets: dict[str, int] = {}
    runs: list[tuple[int | None, float]] = []
    for before, _, evidence, _ in trail[1:]:
        record = _json(evidence)
        step = NEXT[State(before)][0]
        if step == "admit" and isinstance(seed := _get(record, "record", "verify", "seed"), int):
            secrets["verify_seed"] = seed
        elif step == "qualify":
            runs = [(_get(record, "record", "workload", "seed"), _get(record, "record", "score"))]
        elif step == "score" and isinstance(record.get("runs"), list):
            runs = [(_get(r, "seed"), _get(r, "score")) for r in record["runs"]]
    runs = [(seed, float(score) if isinstance(score, (int, float)) else 0.0) for seed, score in runs]
    secrets.update({f"workload_seed_{n}": seed for n, (seed, _) in enumerate(runs) if isinstance(seed, int)})
    proof = hashlib.sha256((last_evidence or sub.reason).encode()).hexdigest()
    return {
        "stage": stage,
        "code": code,
        "reason": _line(sub.reason),
        "evidence": proof,
        "scores": Scores(settled=settled[0] if settled else None, runs=[r for _, r in runs])
        if runs or settled
        else None,
        "secrets": secrets,
        "decided_at": at,
    }


def _get(record, *keys):
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _json(text: str | None) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
