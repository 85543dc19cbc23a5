"""The chain's part of each validator cycle: take in new finalized reveals, once per window of N blocks set weights from
the ledger's crown table through `publish_crowns`, the one weights publisher (`chain weights` uses it too), and
re-sign the miners' report feed when the ledger's decisions changed.

The validator's pipeline calls it at the top of every loop, so both steps cost one block read when nothing changed:
intake runs when the finalized block moved, weights when the head entered a window with no publication yet. The
window is the publication round (`window_round`: `every-N-<head // N>`), journaled by `publish`: a restarted validator reconciles the
window's publication instead of sending it twice, and crowns that change inside a window wait for the next one.
A chain that cannot be reached is reported and tried again next cycle; scoring goes on meanwhile. Intake and weights
are isolated from each other, and the intake isolates each commitment, so no input can stop weights being set.
"""

from __future__ import annotations

from collections.abc import Callable

import bittensor as bt

from ..errors import HotfloatError, InputError
from ..ledger import Ledger
from ..validator import Crown
from ..validator.standings import crowns
from . import feed as report
from .client import Chain
from .feed_server import FeedServer
from .fetch import FetchPolicy
from .intake import Decision, owners, run_intake
from .publish import Publication, PubState, load, publish
from .reveal import RevealPolicy
from .weights import crown_weights, window_round

SETTLED = (PubState.CONFIRMED, PubState.FAILED)
"""A window whose publication reached one of these is done; any other state is reconciled by `publish`."""


def publish_crowns(
    chain: Chain,
    ledger: Ledger,
    netuid: int,
    wallet: bt.Wallet,
    crowned: list[Crown],
    every: int,
    report: Callable[[str], None] = lambda msg: None,
) -> Publication | None:
    """Publishes the crowns' weights once in the head's window of `every` blocks: a window already journaled keeps
    its vector (reconciled, never recomputed), a settled one is returned as it stands; None while no crowned
    identity has a registered owner."""
    round_key = window_round(chain.head(), every)
    done = load(ledger, netuid, round_key)
    if done is not None and done.state in SETTLED:
        return done
    vector = done.weights if done is not None else crown_weights(crowned, owners(ledger, netuid), chain.hotkeys(netuid))
    if not vector:
        return None
    pub = publish(chain, ledger, netuid, round_key, vector, wallet)
    if done is None or pub.state is not done.state:
        report(f"weights {round_key}: {pub.state.value} {dict(sorted(pub.weights.items()))} {pub.reason}".rstrip())
    return pub


class ChainCycle:
    """Intake and weights for one subnet, signed by one validator hotkey; call it once per pipeline loop."""

    def __init__(
        self,
        chain: Chain,
        ledger: Ledger,
        netuid: int,
        wallet: bt.Wallet,
        *,
        weights_every: int,
        policy: FetchPolicy = FetchPolicy(),
        reveals: RevealPolicy = RevealPolicy(),
        feed: FeedServer | None = None,
        report: Callable[[str], None] = lambda msg: None,
    ):
        if weights_every < 1:
            raise InputError("--weights-every must be at least 1 block")
        self.chain, self.ledger, self.netuid, self.wallet = chain, ledger, netuid, wallet
        self.every, self.policy, self.reveals, self.feed, self.report = weights_every, policy, reveals, feed, report
        self._taken: int | None = None
        self._published: tuple | None = None

    def check(self) -> None:
        """Refuses a setup that could never set weights, before any work: an unregistered hotkey, commit-reveal."""
        if self.wallet.hotkey.ss58_address not in self.chain.hotkeys(self.netuid):
            raise InputError(
                f"validator hotkey {self.wallet.hotkey.ss58_address} is not registered on subnet {self.netuid}"
            )
        if self.chain.commit_reveal(self.netuid):
            raise InputError(f"subnet {self.netuid} uses commit-reveal weights; the journal cannot confirm them")

    def __call__(self) -> None:
        """Intake, then weights, each on its own: a fault in one is reported and never keeps the other from running."""
        for step in (self.intake, self.weights, self.publish_feed):
            try:
                step()
            except Exception as e:  # a validator that stops setting weights over one fault is worse than a report
                kind = "" if isinstance(e, HotfloatError) else f"{type(e).__name__}: "
                self.report(f"chain: {step.__name__}: {kind}{e}; trying again next cycle")

    def intake(self) -> list[Decision]:
        """Decides the commitments finalized since the last intake; a transient fetch failure is retried at the next
        finalized block."""
        block = self.chain.finalized()
        if block == self._taken:
            return []
        decisions = run_intake(self.chain, self.ledger, self.netuid, self.policy, reveals=self.reveals)
        self._taken = block
        for d in decisions:
            self.report(f"intake: uid {d.uid} block {d.block} {(d.identity or '')[:16]} {d.outcome.value}: {d.reason}")
        return decisions

    def publish_feed(self) -> None:
        """Rebuilds and re-signs the report feed when a decision was recorded since the last one."""
        if self.feed is None:
            return
        with self.ledger.transaction() as db:
            mark = (
                db.execute("SELECT COUNT(*), MAX(decided_at) FROM chain_observations").fetchone(),
                db.execute("SELECT MAX(id) FROM transitions").fetchone(),
            )
        if mark == self._published:
            return
        built = report.build(self.ledger, self.netuid, self.wallet.hotkey.ss58_address)
        self.feed.update(report.sign(built, self.wallet.hotkey))
        self._published = mark

    def weights(self) -> Publication | None:
        """Publishes the crown table's weights once in the head's window."""
        return publish_crowns(
            self.chain,
            self.ledger,
            self.netuid,
            self.wallet,
            list(crowns(self.ledger).values()),
            self.every,
            self.report,
        )
