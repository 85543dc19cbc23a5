"""Intake against the stand-in chain (real SDK) and a loopback HTTPS origin: accepted bundles reach the ledger once,
every hostile commitment is refused with its reason, and the ledger stays consistent."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import bittensor as bt
import pytest

from hotfloat.chain.client import Chain
from hotfloat.chain.intake import Outcome, observations, run_intake
from hotfloat.chain.miner import commitment
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


def post(chain, wallet, identity, url, payment=None):
    _, raw = commitment(identity, url, payment)
    return chain.commit(NETUID, raw, wallet)


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


def test_accepted_bundle_is_enqueued_once(chain, ledger, wallets, origin, policy, packed):
    identity, archive = packed("good")
    post(chain, wallets["miner1"], identity, origin.serve("/good.tar.gz", archive))
    first = run_intake(chain, ledger, NETUID, policy)
    d = only(first, wallets["miner1"].hotkey.ss58_address)
    assert d.outcome is Outcome.ACCEPTED and d.uid == 1 and d.identity == identity
    sub = ledger.get(d.submission_id)
    assert sub.identity == identity and sub.submitter == d.hotkey and ledger.archive(sub.id) == archive
    assert run_intake(chain, ledger, NETUID, policy) == []
    assert len(ledger.submissions()) == 1
    assert_consistent(ledger)


def test_only_finalized_commitments_are_read(standin, chain, ledger, wallets, origin, policy, packed):
    identity, archive = packed("fin")
    _, raw = commitment(identity, origin.serve("/fin.tar.gz", archive))
    sub = LocalSubstrate(standin.removeprefix("standin:"))
    call = asyncio.run(sub.compose(bt.calls.Commitments.set_commitment(netuid=NETUID, info={"fields": to_fields(raw)})))
    assert asyncio.run(sub.submit(call, wallets["miner2"].hotkey, wait_for_finalization=False)).success
    assert run_intake(chain, ledger, NETUID, policy) == []
    sub.advance(2)
    assert (
        only(run_intake(chain, ledger, NETUID, policy), wallets["miner2"].hotkey.ss58_address).outcome
        is Outcome.ACCEPTED
    )


def test_first_committer_wins_and_copies_are_refused(chain, ledger, wallets, origin, policy, packed):
    identity, archive = packed("orig")
    url = origin.serve("/orig.tar.gz", archive)
    post(chain, wallets["miner1"], identity, url)
    post(chain, wallets["miner2"], identity, origin.serve("/copy.tar.gz", archive))
    decisions = run_intake(chain, ledger, NETUID, policy)
    assert only(decisions, wallets["miner1"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
    copy = only(decisions, wallets["miner2"].hotkey.ss58_address)
    assert copy.outcome is Outcome.REFUSED and copy.reason.startswith("duplicate identity")
    assert_consistent(ledger)


def test_recommitting_an_accepted_identity_is_a_replay(chain, ledger, wallets, origin, policy, packed):
    identity, archive = packed("again")
    url = origin.serve("/again.tar.gz", archive)
    post(chain, wallets["miner1"], identity, url)
    run_intake(chain, ledger, NETUID, policy)
    post(chain, wallets["miner1"], identity, url)
    d = only(run_intake(chain, ledger, NETUID, policy), wallets["miner1"].hotkey.ss58_address)
    assert d.outcome is Outcome.REFUSED and d.reason.startswith("replay")
    assert len(ledger.submissions()) == 1


def test_a_payment_reference_pays_once(chain, ledger, wallets, origin, policy, packed):
    a, archive_a = packed("pa")
    b, archive_b = packed("pb")
    post(chain, wallets["miner1"], a, origin.serve("/pa.tar.gz", archive_a), payment="120-0003")
    post(chain, wallets["miner2"], b, origin.serve("/pb.tar.gz", archive_b), payment="120-0003")
    decisions = run_intake(chain, ledger, NETUID, policy)
    assert only(decisions, wallets["miner1"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
    second = only(decisions, wallets["miner2"].hotkey.ss58_address)
    assert second.outcome is Outcome.REFUSED and "payment reference" in second.reason


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"not json at all", "malformed payload"),
        (b'{"v":2,"h":"' + b"a" * 64 + b'","u":"https://x.org/a"}', "malformed payload (v"),
        (b'{"h":"' + b"a" * 64 + b'","u":"http://x.org/a","v":1}', "must use https"),
        (b'{"h":"' + b"A" * 64 + b'","u":"https://x.org/a","v":1}', "malformed payload (h"),
        (b'{"h":"' + b"a" * 64 + b'","u":"https://x.org/a","v":1,"x":1}', "malformed payload (x"),
        (b'{"v":1,"h":"' + b"a" * 64 + b'","u":"https://x.org/a"}', "non-canonical"),
        (b'{"h":"' + b"a" * 64 + b'","u":"https://x.org/' + b"a" * 1000 + b'","v":1}', "oversize payload"),
    ],
)
def test_malformed_and_oversize_payloads_are_refused(chain, ledger, wallets, policy, raw, why):
    chain.commit(NETUID, raw, wallets["miner3"])
    d = only(run_intake(chain, ledger, NETUID, policy), wallets["miner3"].hotkey.ss58_address)
    assert d.outcome is Outcome.REFUSED and why in d.reason, d.reason
    assert ledger.submissions() == []


def test_hostile_archives_are_refused_and_leave_the_ledger_clean(chain, ledger, wallets, origin, policy, packed):
    identity, archive = packed("real")
    _, other = packed("other")
    post(chain, wallets["miner1"], identity, origin.serve("/wrong.tar.gz", other))
    origin.routes["/drip"] = ("drip-body", 0.05)
    post(chain, wallets["miner2"], packed("slow")[0], origin.url("/drip"))
    origin.routes["/huge"] = ("bytes", bytes(policy.max_bytes + 10))
    post(chain, wallets["miner3"], packed("huge")[0], origin.url("/huge"))
    short = replace(policy, deadline_s=2)
    decisions = {d.hotkey: d for d in run_intake(chain, ledger, NETUID, short, max_attempts=1)}
    assert "identity mismatch" in decisions[wallets["miner1"].hotkey.ss58_address].reason
    assert "deadline" in decisions[wallets["miner2"].hotkey.ss58_address].reason
    assert "exceeds" in decisions[wallets["miner3"].hotkey.ss58_address].reason
    assert all(d.outcome is Outcome.REFUSED for d in decisions.values())
    assert ledger.submissions() == []
    assert_consistent(ledger)


def test_transient_fetch_failures_are_retried_then_accepted(chain, ledger, wallets, origin, policy, packed):
    identity, archive = packed("flaky")
    origin.routes["/flaky.tar.gz"] = ("status", 503)
    post(chain, wallets["miner1"], identity, origin.url("/flaky.tar.gz"))
    post(chain, wallets["miner2"], identity, origin.serve("/late-copy.tar.gz", archive))
    first = run_intake(chain, ledger, NETUID, policy)
    assert [d.outcome for d in first] == [Outcome.RETRY]
    origin.serve("/flaky.tar.gz", archive)
    second = run_intake(chain, ledger, NETUID, policy)
    assert only(second, wallets["miner1"].hotkey.ss58_address).outcome is Outcome.ACCEPTED
    assert only(second, wallets["miner2"].hotkey.ss58_address).reason.startswith("duplicate identity")
    view = observations(ledger, NETUID)
    assert sorted(s for s, _, _ in view.values()) == ["accepted", "refused"]
    assert_consistent(ledger)
