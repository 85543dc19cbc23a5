"""Weight publication through a journal, so a crash never sets one round's weights twice nor skips it silently.

A round's vector moves intent -> sent -> confirmed. `sent` is written *before* the extrinsic leaves (write-ahead,
with the head block at that moment), so after any crash the journal knows something may be in flight. A sent row is
confirmed only by reading the chain back: this validator's row updated after `sent_at` and equal (to u16 rounding)
to the journaled vector. Until then it is never resent; once the head passes `sent_at` plus the extrinsic's era
(mortality) the extrinsic can no longer land, so the row becomes `expired` and the next run sends it again. A refusal
by the chain is final (`failed`, with its reason). Commit-reveal subnets are refused: their rows change only at the
reveal, so this read-back could not confirm them.
"""

from __future__ import annotations

import json
import time
from enum import Enum

import bittensor as bt
from bittensor.settings import DEFAULT_ERA_PERIOD

from ..errors import InfrastructureError, InputError
from ..ledger import Ledger
from ..record import Record
from .client import Chain, ChainRefused

U16_SLACK = 2 / 65535


class PubState(str, Enum):
    INTENT = "intent"
    SENT = "sent"
    CONFIRMED = "confirmed"
    EXPIRED = "expired"
    FAILED = "failed"


class Publication(Record):
    """One round's journaled weight vector and how far it got."""

    netuid: int
    round: str
    """The round's name (`weights.window_round`); one publication per round."""
    hotkey: str
    weights: dict[int, float]
    u16: dict[int, int]
    """The quantised vector the SDK sends, as previewed when the intent was journaled."""
    state: PubState
    sent_at: int | None = None
    """Head block when the extrinsic was about to leave."""
    extrinsic_id: str | None = None
    reason: str = ""


def publish(
    chain: Chain,
    ledger: Ledger,
    netuid: int,
    round_key: str,
    weights: dict[int, float],
    wallet: bt.Wallet,
    era_blocks: int = DEFAULT_ERA_PERIOD,
) -> Publication:
    """Journals and sends one round's weights, or reconciles the round's earlier attempt; returns where it stands."""
    if not weights or not any(w > 0 for w in weights.values()):
        raise InputError("no positive weights to publish")
    hotkey = wallet.hotkey.ss58_address
    uid = _uid(chain, netuid, hotkey)
    if chain.commit_reveal(netuid):
        raise InputError(f"subnet {netuid} uses commit-reveal weights; the journal cannot confirm them by read-back")
    pub = load(ledger, netuid, round_key)
    if pub is None:
        pub = Publication(
            netuid=netuid,
            round=round_key,
            hotkey=hotkey,
            weights=dict(sorted(weights.items())),
            u16=chain.preview_weights(netuid, weights),
            state=PubState.INTENT,
        )
        _save(ledger, pub)
    elif pub.weights != dict(sorted(weights.items())) or pub.hotkey != hotkey:
        raise InputError(f"round {round_key!r} is already journaled with another vector or hotkey")
    pub = reconcile(chain, ledger, pub, uid, era_blocks)
    if pub.state not in (PubState.INTENT, PubState.EXPIRED):
        return pub
    pub = _save(ledger, pub.model_copy(update={"state": PubState.SENT, "sent_at": chain.head(), "reason": ""}))
    try:
        receipt = chain.set_weights(netuid, pub.weights, wallet)
    except ChainRefused as e:
        return _save(ledger, pub.model_copy(update={"state": PubState.FAILED, "reason": str(e)}))
    except InfrastructureError as e:
        return _save(ledger, pub.model_copy(update={"reason": f"in flight, outcome unknown: {e}"}))
    pub = _save(ledger, pub.model_copy(update={"extrinsic_id": receipt.extrinsic_id}))
    return reconcile(chain, ledger, pub, uid, era_blocks)


def reconcile(
    chain: Chain, ledger: Ledger, pub: Publication, uid: int, era_blocks: int = DEFAULT_ERA_PERIOD
) -> Publication:
    """Settles a sent row from the chain: confirmed when read back, expired once it can no longer land."""
    if pub.state is not PubState.SENT:
        return pub
    row, last = chain.weights_row(pub.netuid, uid)
    if pub.sent_at is not None and last > pub.sent_at:
        if _same(row, pub.u16):
            return _save(
                ledger, pub.model_copy(update={"state": PubState.CONFIRMED, "reason": f"read back at block {last}"})
            )
        return _save(
            ledger,
            pub.model_copy(
                update={"state": PubState.FAILED, "reason": f"chain row set at block {last} differs from the journal"}
            ),
        )
    if chain.head() > (pub.sent_at or 0) + era_blocks:
        return _save(
            ledger,
            pub.model_copy(
                update={"state": PubState.EXPIRED, "reason": f"not on chain {era_blocks} blocks after sending"}
            ),
        )
    return pub


def _same(row: dict[int, int], expected: dict[int, int]) -> bool:
    """Equal as proportions to u16 rounding: the chain stores max-upscaled values whose scale carries no meaning."""
    if set(row) != set(expected) or not row:
        return False
    a, b = sum(row.values()), sum(expected.values())
    return all(abs(row[u] / a - expected[u] / b) <= U16_SLACK for u in row)


def _uid(chain: Chain, netuid: int, hotkey: str) -> int:
    hotkeys = chain.hotkeys(netuid)
    if hotkey not in hotkeys:
        raise InputError(f"validator hotkey {hotkey} is not registered on subnet {netuid}")
    return hotkeys.index(hotkey)


def load(ledger: Ledger, netuid: int, round_key: str) -> Publication | None:
    with ledger.transaction() as db:
        row = db.execute(
            "SELECT hotkey, weights, u16, state, sent_at, extrinsic_id, reason FROM weight_publications"
            " WHERE netuid = ? AND round = ?",
            (netuid, round_key),
        ).fetchone()
    if row is None:
        return None
    hotkey, weights, u16, state, sent_at, xid, reason = row
    return Publication(
        netuid=netuid,
        round=round_key,
        hotkey=hotkey,
        weights={int(k): v for k, v in json.loads(weights).items()},
        u16={int(k): v for k, v in json.loads(u16).items()},
        state=PubState(state),
        sent_at=sent_at,
        extrinsic_id=xid,
        reason=reason,
    )


def history(ledger: Ledger, netuid: int) -> list[Publication]:
    with ledger.transaction() as db:
        rounds = [
            r[0]
            for r in db.execute("SELECT round FROM weight_publications WHERE netuid = ? ORDER BY updated_at", (netuid,))
        ]
    return [p for r in rounds if (p := load(ledger, netuid, r)) is not None]


def _save(ledger: Ledger, pub: Publication) -> Publication:
    with ledger.transaction() as db:
        db.execute(
            "INSERT INTO weight_publications (netuid, round, hotkey, weights, u16, state, sent_at, extrinsic_id, reason,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (netuid, round) DO UPDATE SET"
            " state = excluded.state, sent_at = excluded.sent_at, extrinsic_id = excluded.extrinsic_id,"
            " reason = excluded.reason, updated_at = excluded.updated_at",
            (
                pub.netuid,
                pub.round,
                pub.hotkey,
                json.dumps(pub.weights),
                json.dumps(pub.u16),
                pub.state.value,
                pub.sent_at,
                pub.extrinsic_id,
                pub.reason,
                time.time(),
            ),
        )
    return pub
