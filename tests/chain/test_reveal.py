"""chain/reveal.py end to end on the stand-in chain, through the real SDK: the hostile reveals a copier or a careless
miner posts (a wrong digest, too early, too late, the same reveal again, someone else's) are each refused in one line
with their code, and nothing of theirs is fetched or enqueued."""

from __future__ import annotations

import pytest

from hotfloat.chain.client import Chain
from hotfloat.chain.codes import Code
from hotfloat.chain.intake import Outcome, run_intake
from hotfloat.chain.miner import reveal_bytes
from hotfloat.chain.reveal import RevealPolicy
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.chain.tables import open_ledger

NETUID = 7


@pytest.fixture
def chain(standin):
    c = Chain(standin)
    yield c
    c.close()


@pytest.fixture
def decide(chain, tmp_path, policy, reveals):
    ledger = open_ledger(str(tmp_path / "ledger.db"))

    def run(hotkey, reveal_policy=reveals):
        found = [d for d in run_intake(chain, ledger, NETUID, policy, reveals=reveal_policy) if d.hotkey == hotkey]
        assert len(found) == 1, found
        return found[0]

    yield run
    assert [s.identity for s in ledger.submissions()] == []
    ledger.close()


def refused(d, code, *words):
    assert d.outcome is Outcome.REFUSED and d.code is code, d
    assert "\n" not in d.reason and all(w in d.reason for w in words), d.reason


def test_a_reveal_that_does_not_hash_to_the_digest_is_refused(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("m")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/m.tar.gz", archive), reveal=False)
    chain.reveal(
        NETUID, reveal_bytes(sealed.model_copy(update={"salt": "0" * 32}), sealed.commit_block), wallets["miner1"]
    )
    refused(decide(wallets["miner1"].hotkey.ss58_address), Code.REVEAL_MISMATCH, "does not match its commitment")
    assert origin.hits.get("/m.tar.gz") is None


def test_a_reveal_of_another_bundle_than_committed_is_refused(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("swap")
    other, _ = packed("swapped")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/swap.tar.gz", archive), reveal=False)
    chain.reveal(
        NETUID, reveal_bytes(sealed.model_copy(update={"identity": other}), sealed.commit_block), wallets["miner1"]
    )
    refused(decide(wallets["miner1"].hotkey.ss58_address), Code.REVEAL_MISMATCH, f"block {sealed.commit_block}")


def test_an_early_reveal_is_refused(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("early")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/early.tar.gz", archive))
    d = decide(wallets["miner1"].hotkey.ss58_address, RevealPolicy(after=10, within=30))
    refused(d, Code.REVEAL_EARLY, "too early", f"commit at block {sealed.commit_block}", "10 or more")


def test_a_late_reveal_is_refused(standin, chain, wallets, origin, packed, submit, decide, reveals):
    identity, archive = packed("late")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/late.tar.gz", archive), reveal=False)
    LocalSubstrate(standin.removeprefix("standin:")).advance(reveals.within + 1)
    chain.reveal(NETUID, reveal_bytes(sealed, sealed.commit_block), wallets["miner1"])
    refused(decide(wallets["miner1"].hotkey.ss58_address), Code.REVEAL_LATE, "too late", f"at most {reveals.within}")


def test_the_same_reveal_posted_again_is_a_replay(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("twice")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/twice.tar.gz", archive))
    hotkey = wallets["miner1"].hotkey.ss58_address
    chain.commit(NETUID, reveal_bytes(sealed, sealed.commit_block), wallets["miner1"])
    d = decide(hotkey)
    refused(d, Code.REVEAL_REPLAYED, "already revealed", f"block {sealed.commit_block}")


def test_someone_elses_reveal_is_refused(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("theirs")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/theirs.tar.gz", archive), reveal=False)
    chain.reveal(NETUID, reveal_bytes(sealed, sealed.commit_block), wallets["miner2"])
    d = decide(wallets["miner2"].hotkey.ss58_address)
    refused(d, Code.REVEAL_FOREIGN, "someone else's reveal", wallets["miner1"].hotkey.ss58_address)


def test_someone_elses_digest_committed_again_opens_nothing(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("front")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/front.tar.gz", archive), reveal=False)
    copied = chain.commit_digest(NETUID, sealed.digest, wallets["miner2"])  # the digest is public: re-committed
    chain.reveal(NETUID, reveal_bytes(sealed, copied), wallets["miner2"])
    refused(decide(wallets["miner2"].hotkey.ss58_address), Code.REVEAL_MISMATCH, "does not match")


def test_a_reveal_naming_another_block_opens_nothing(chain, wallets, origin, packed, submit, decide):
    identity, archive = packed("shift")
    sealed = submit(chain, wallets["miner1"], identity, origin.serve("/shift.tar.gz", archive), reveal=False)
    chain.reveal(NETUID, reveal_bytes(sealed, sealed.commit_block - 1), wallets["miner1"])
    refused(
        decide(wallets["miner1"].hotkey.ss58_address),
        Code.NO_COMMIT,
        f"digest committed at block {sealed.commit_block}",
    )
