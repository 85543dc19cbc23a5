"""Intake against the stand-in chain (real SDK) and a loopback HTTPS origin: a reveal that opens its digest in time is
taken in once, in commit order; every hostile commitment is refused with its code and reason, and the ledger stays
consistent."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import bittensor as bt
import pytest

from hotfloat.chain.client import Chain
from hotfloat.chain.codes import Code
from hotfloat.chain.intake import Outcome, observations, run_intake
from hotfloat.chain.miner import reveal_bytes
from hotfloat.chain.payload import to_fields
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.chain.tables import open_ledger

NETUID = 7


@pytest.fixture
def chain(standin):
    c = Chain(standin)
    yield c
    c.close()


@pytest.fixture
def ledger(tmp_path):
    led = open_ledger(str(tmp_path / "ledger.db"))
    yield led
    led.close()


@pytest.fixture
def intake(chain, ledger, policy, reveals):
    def run(**kw):
        return run_intake(chain, ledger, NETUID, kw.pop("fetch", policy), reveals=kw.pop("reveals", reveals), **kw)

    return run


def only(decisions, hotkey):
    found = [d for d in decisions if d.hotkey == hotkey]
    assert len(found) == 1, decisions
    return found[0]


def assert_consistent(ledger):
    """Every accepted observation names a ledger submission of its identity; nothing else is in the ledger."""
    with ledger.transaction() as db:
        accepted = db.execute(
            "SELECT identity, submission_id FROM chain_observations WHERE status = 'accepted'"
        ).fetchall()
    subs = {s.id: s.identity for s in ledger.submissions()}
    assert sorted(subs.items()) == sorted((sid, ident) for ident, sid in accepted)


def test_accepted_bundle_is_enqueued_once(chain, ledger, wallets, origin, packed, submit, intake):
    identity, archive = packed("good")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/good.tar.gz", archive))
    d = only(intake(), wallets["miner1"].hotkey.ss58_address)
    assert d.outcome is Outcome.ACCEPTED and d.uid == 1 and d.identity == identity
    assert d.commit_block == sealed.commit_block and d.block == sealed.commit_block + 3
    sub = ledger.get(d.submission_id)
    assert sub.identity == identity and sub.submitter == d.hotkey and ledger.archive(sub.id) == archive
    assert intake() == []
    assert len(ledger.submissions()) == 1
    assert_consistent(ledger)


def test_a_digest_alone_is_nothing_to_decide(chain, ledger, wallets, origin, packed, submit, intake):
    identity, archive = packed("sealed")
    submit(chain, wallets["miner1"], identity, origin.serve("/sealed.tar.gz", archive), reveal=False)
    assert intake() == [] and ledger.submissions() == []
    assert origin.hits.get("/sealed.tar.gz") is None  # the URL was never on chain, so nothing could fetch it


def test_only_finalized_reveals_are_read(standin, chain, ledger, wallets, origin, packed, submit, intake):
    identity, archive = packed("fin")
    sealed = submit(chain, wallets["miner2"], identity, origin.serve("/fin.tar.gz", archive), reveal=False)
    sub = LocalSubstrate(standin.removeprefix("standin:"))
    raw = reveal_bytes(sealed, sealed.commit_block)
    call = asyncio.run(sub.compose(bt.calls.Commitments.set_commitment(netuid=NETUID, info={"fields": to_fields(raw)})))
    assert asyncio.run(sub.submit(call, wallets["miner2"].hotkey, wait_for_finalization=False)).success
    assert intake() == []
    sub.advance(2)
    assert only(intake(), wallets["miner2"].hotkey.ss58_address).outcome is Outcome.ACCEPTED


def test_the_first_committer_wins_even_when_it_reveals_last(
    standin, chain, ledger, wallets, origin, packed, submit, intake, reveals
):
    identity, archive = packed("orig")
    first = submit(chain, wallets["miner1"], identity, origin.serve("/orig.tar.gz", archive), reveal=False)
    submit(chain, wallets["miner2"], identity, origin.serve("/copy.tar.gz", archive))
    assert intake() == []  # miner2's reveal waits: a digest committed before it may still be revealed
    chain.reveal(NETUID, reveal_bytes(first, first.commit_block), wallets["miner1"])
    decisions = intake()
    assert only(decisions, wallets["miner1"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
    copy = only(decisions, wallets["miner2"].hotkey.ss58_address)
    assert copy.outcome is Outcome.REFUSED and copy.code is Code.DUPLICATE_IDENTITY
    assert f"first committed by {wallets['miner1'].hotkey.ss58_address} at block {first.commit_block}" in copy.reason
    assert_consistent(ledger)


def test_an_unrevealed_digest_stops_holding_others_back_once_expired(
    standin, chain, ledger, wallets, origin, packed, submit, intake, reveals
):
    a, archive_a = packed("never")
    b, archive_b = packed("later")
    submit(chain, wallets["miner1"], a, origin.serve("/never.tar.gz", archive_a), reveal=False)
    submit(chain, wallets["miner2"], b, origin.serve("/later.tar.gz", archive_b))
    assert intake() == []
    LocalSubstrate(standin.removeprefix("standin:")).advance(reveals.within)
    assert only(intake(), wallets["miner2"].hotkey.ss58_address).outcome is Outcome.ACCEPTED


def test_recommitting_an_accepted_identity_is_a_replay(chain, ledger, wallets, origin, packed, submit, intake):
    identity, archive = packed("again")
    url = origin.serve("/again.tar.gz", archive)
    submit(chain, wallets["miner1"], identity, url)
    intake()
    submit(chain, wallets["miner1"], identity, url)
    d = only(intake(), wallets["miner1"].hotkey.ss58_address)
    assert d.outcome is Outcome.REFUSED and d.code is Code.REPLAY and d.reason.startswith("replay")
    assert len(ledger.submissions()) == 1


def test_a_payment_reference_pays_once(chain, ledger, wallets, origin, packed, submit, intake):
    a, archive_a = packed("pa")
    b, archive_b = packed("pb")
    submit(chain, wallets["miner1"], a, origin.serve("/pa.tar.gz", archive_a), payment="120-0003")
    submit(chain, wallets["miner2"], b, origin.serve("/pb.tar.gz", archive_b), payment="120-0003")
    decisions = intake()
    assert only(decisions, wallets["miner1"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
    second = only(decisions, wallets["miner2"].hotkey.ss58_address)
    assert second.outcome is Outcome.REFUSED and second.code is Code.REPLAY and "payment reference" in second.reason


H = b"a" * 64
S = b"b" * 32


@pytest.mark.parametrize(
    "raw, code, why",
    [
        (b"not json at all", Code.MALFORMED, "malformed payload"),
        (b'{"h":"' + H + b'","u":"https://x.org/a","v":1}', Code.PLAIN_COMMITMENT, "plain commitment"),
        (b'{"c":1,"h":"' + H + b'","s":"' + S + b'","u":"http://x.org/a","v":2}', Code.MALFORMED, "must use https"),
        (b'{"c":1,"h":"' + b"A" * 64 + b'","s":"' + S + b'","u":"https://x.org/a","v":2}', Code.MALFORMED, "(h"),
        (b'{"c":1,"h":"' + H + b'","s":"' + S + b'","u":"https://x.org/a","v":2,"x":1}', Code.MALFORMED, "(x"),
        (b'{"v":2,"c":1,"h":"' + H + b'","s":"' + S + b'","u":"https://x.org/a"}', Code.MALFORMED, "non-canonical"),
        (
            b'{"c":1,"h":"' + H + b'","s":"' + S + b'","u":"https://x.org/' + b"a" * 1000 + b'","v":2}',
            Code.MALFORMED,
            "oversize",
        ),
        (
            b'{"c":1,"h":"' + H + b'","s":"' + S + b'","u":"https://x.org/a","v":2}',
            Code.NO_COMMIT,
            "no digest to reveal",
        ),
    ],
)
def test_malformed_plain_and_uncommitted_payloads_are_refused(chain, ledger, wallets, intake, raw, code, why):
    chain.commit(NETUID, raw, wallets["miner3"])
    d = only(intake(), wallets["miner3"].hotkey.ss58_address)
    assert d.outcome is Outcome.REFUSED and d.code is code and why in d.reason, d.reason
    assert ledger.submissions() == []


def test_hostile_archives_are_refused_and_leave_the_ledger_clean(
    chain, ledger, wallets, origin, policy, packed, submit, intake
):
    identity, archive = packed("real")
    _, other = packed("other")
    submit(chain, wallets["miner1"], identity, origin.serve("/wrong.tar.gz", other))
    origin.routes["/drip"] = ("drip-body", 0.05)
    submit(chain, wallets["miner2"], packed("slow")[0], origin.url("/drip"))
    origin.routes["/huge"] = ("bytes", bytes(policy.max_bytes + 10))
    submit(chain, wallets["miner3"], packed("huge")[0], origin.url("/huge"))
    decisions = {d.hotkey: d for d in intake(fetch=replace(policy, deadline_s=2), max_attempts=1)}
    assert "identity mismatch" in decisions[wallets["miner1"].hotkey.ss58_address].reason
    assert "deadline" in decisions[wallets["miner2"].hotkey.ss58_address].reason
    assert "exceeds" in decisions[wallets["miner3"].hotkey.ss58_address].reason
    assert all(d.outcome is Outcome.REFUSED and d.code is Code.FETCH_REFUSED for d in decisions.values())
    assert ledger.submissions() == []
    assert_consistent(ledger)


def test_transient_fetch_failures_are_retried_then_accepted(chain, ledger, wallets, origin, packed, submit, intake):
    identity, archive = packed("flaky")
    origin.routes["/flaky.tar.gz"] = ("status", 503)
    submit(chain, wallets["miner1"], identity, origin.url("/flaky.tar.gz"))
    submit(chain, wallets["miner2"], identity, origin.serve("/late-copy.tar.gz", archive))
    first = intake()
    assert [d.outcome for d in first] == [Outcome.RETRY]  # and miner2, committed later, waits behind the retry
    origin.serve("/flaky.tar.gz", archive)
    second = intake()
    assert only(second, wallets["miner1"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
    assert only(second, wallets["miner2"].hotkey.ss58_address).reason.startswith("duplicate identity")
    view = observations(ledger, NETUID)
    assert sorted(s for s, _, _ in view.values()) == ["accepted", "refused"]
    assert_consistent(ledger)


def test_a_retried_reveal_replaced_on_chain_holds_nothing_back(chain, ledger, wallets, origin, packed, submit, intake):
    a, archive_a = packed("gone")
    b, archive_b = packed("next")
    origin.routes["/gone.tar.gz"] = ("status", 503)
    submit(chain, wallets["miner1"], a, origin.url("/gone.tar.gz"))
    submit(chain, wallets["miner2"], b, origin.serve("/next.tar.gz", archive_b))
    assert [d.outcome for d in intake()] == [Outcome.RETRY]  # miner2 waits behind miner1's retry
    chain.commit(NETUID, b"moved on", wallets["miner1"])  # miner1 replaces its reveal: it will never be seen again
    decisions = intake()
    assert only(decisions, wallets["miner2"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
