"""The chain seam (real SDK) over the stand-in: block-pinned reads, signed writes, and the chain's refusals."""

from __future__ import annotations

import asyncio

import bittensor as bt
import pytest

from hotfloat.chain.client import Chain, ChainRefused
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.errors import InfrastructureError, InputError

NETUID = 7


@pytest.fixture
def chain(standin):
    c = Chain(standin)
    yield c
    c.close()


def test_metagraph_hotkeys_are_indexed_by_uid(chain, wallets):
    assert chain.hotkeys(NETUID) == [
        wallets[n].hotkey.ss58_address for n in ("validator", "miner1", "miner2", "miner3")
    ]
    with pytest.raises(InputError, match="does not exist"):
        chain.hotkeys(99)


def test_reads_are_pinned_to_their_block(chain, wallets):
    chain.commit(NETUID, b"first", wallets["miner1"])
    before = chain.head()
    chain.commit(NETUID, b"second", wallets["miner2"])
    assert [c.data for c in chain.commitments(NETUID, before)] == ["first"]
    now = chain.commitments(NETUID, chain.head())
    assert [(c.uid, c.data) for c in now] == [(1, "first"), (2, "second")]
    assert chain.finalized() == chain.head() - 2


def test_a_newer_commitment_replaces_the_hotkeys_older_one(chain, wallets):
    chain.commit(NETUID, b"old", wallets["miner1"])
    chain.commit(NETUID, b"new", wallets["miner1"])
    assert [c.data for c in chain.commitments(NETUID, chain.head())] == ["new"]


def test_unregistered_hotkeys_cannot_commit(chain, wallets):
    with pytest.raises(ChainRefused, match="not registered"):
        chain.commit(NETUID, b"x", wallets["stranger"])


def test_payloads_beyond_the_field_limit_are_refused_before_sending(chain, wallets):
    with pytest.raises(InputError, match="allows 9"):
        chain.commit(NETUID, b"x" * (10 * 128), wallets["miner1"])


def test_a_key_that_cannot_sign_is_refused(standin, wallets):
    sub = LocalSubstrate(standin.removeprefix("standin:"))
    public = bt.keyfiles.Keypair(ss58_address=wallets["miner1"].hotkey.ss58_address)
    call = asyncio.run(sub.compose(bt.calls.Commitments.set_commitment(netuid=NETUID, info={"fields": []})))
    result = asyncio.run(sub.submit(call, public))
    assert not result.success and "sign" in result.message


def test_weights_for_unknown_uids_are_refused_by_the_chain(chain, wallets):
    with pytest.raises(ChainRefused, match="unknown uids"):
        chain.set_weights(NETUID, {1: 1.0, 42: 1.0}, wallets["validator"])
    assert chain.weights_row(NETUID, 0) == ({}, 0)


def test_preview_matches_what_the_sdk_stores(chain, wallets):
    weights = {1: 0.5, 2: 0.3, 3: 0.2}
    preview = chain.preview_weights(NETUID, weights)
    chain.set_weights(NETUID, weights, wallets["validator"])
    assert chain.weights_row(NETUID, 0)[0] == preview == {1: 65535, 2: 39321, 3: 26214}


def test_missing_standin_is_an_infrastructure_error(tmp_path):
    with pytest.raises(InfrastructureError, match="does not exist"):
        Chain(f"standin:{tmp_path}/missing.json")


def test_unknown_network_is_bad_input():
    with pytest.raises(InputError, match="Unknown network"):
        Chain("nowhere")


def test_a_digest_is_committed_in_the_sha256_field_and_read_back(chain, wallets, standin):
    block = chain.commit_digest(NETUID, "ab" * 32, wallets["miner1"])
    [c] = chain.commitments(NETUID, chain.finalized())
    assert (c.data, c.block) == ("sha256:0x" + "ab" * 32, block)
    state = LocalSubstrate(standin.removeprefix("standin:"))
    stored = asyncio.run(state.query("Commitments", "CommitmentOf", [NETUID, wallets["miner1"].hotkey.ss58_address]))
    assert stored["info"]["fields"] == [{"Sha256": "0x" + "ab" * 32}]


def test_a_reveal_replaces_the_digest_and_history_keeps_both(chain, wallets):
    hotkey = wallets["miner2"].hotkey.ss58_address
    committed = chain.commit_digest(NETUID, "cd" * 32, wallets["miner2"])
    revealed = chain.reveal(NETUID, b'{"v":2}', wallets["miner2"])
    assert revealed > committed
    assert chain.commitment_of(NETUID, hotkey, revealed - 1).data == "sha256:0x" + "cd" * 32
    assert chain.commitment_of(NETUID, hotkey, revealed).data == '{"v":2}'
    assert chain.commitment_of(NETUID, hotkey, committed - 1) is None
    assert chain.commitment_of(NETUID, hotkey, -1) is None


def test_hash_fields_of_the_wrong_size_or_kind_are_refused_by_the_chain(chain, wallets, standin):
    with pytest.raises(ChainRefused, match="32-byte hashes"):
        chain.commit_digest(NETUID, "ab" * 31, wallets["miner1"])
    sub = LocalSubstrate(standin.removeprefix("standin:"))
    info = {"fields": [{"Sha512": "0x" + "ab" * 32}]}
    call = asyncio.run(sub.compose(bt.calls.Commitments.set_commitment(netuid=NETUID, info=info)))
    result = asyncio.run(sub.submit(call, wallets["miner1"].hotkey))
    assert not result.success and "32-byte hashes" in result.message


def test_a_commitment_that_does_not_read_back_is_refused(chain, wallets, monkeypatch):
    monkeypatch.setattr(
        chain, "finalized", lambda: 0
    )  # a read-back from before the write: what a lost write looks like
    with pytest.raises(ChainRefused, match="did not read back"):
        chain.commit_digest(NETUID, "ef" * 32, wallets["miner3"])
