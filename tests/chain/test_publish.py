"""The publication journal against the stand-in chain: confirmed by read-back, never sent twice, never skipped."""

from __future__ import annotations

import json

import pytest

from hotfloat.chain.client import Chain
from hotfloat.chain.publish import PubState, history, publish
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.chain.tables import open_ledger
from hotfloat.errors import InputError

NETUID = 7
WEIGHTS = {1: 0.8, 2: 0.2}


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs, no handler catches it."""


class CrashAfterSend(Chain):
    def set_weights(self, netuid, weights, wallet):
        super().set_weights(netuid, weights, wallet)
        raise Crash


class CrashBeforeSend(Chain):
    def set_weights(self, netuid, weights, wallet):
        raise Crash


def weight_extrinsics(standin: str) -> int:
    state = json.loads(open(standin.removeprefix("standin:")).read())
    return sum(
        1
        for b in state["blocks"]
        for x in b["extrinsics"]
        if x["call"]["call_function"] == "set_mechanism_weights" and not x["error"]
    )


@pytest.fixture
def ledger(tmp_path):
    led = open_ledger(str(tmp_path / "ledger.db"))
    yield led
    led.close()


def test_publish_is_confirmed_by_read_back_and_idempotent(standin, ledger, wallets):
    chain = Chain(standin)
    pub = publish(chain, ledger, NETUID, "r1", WEIGHTS, wallets["validator"])
    assert pub.state is PubState.CONFIRMED and pub.u16 == {1: 65535, 2: 16384} and pub.extrinsic_id
    row, last = chain.weights_row(NETUID, 0)
    assert row == pub.u16 and last > pub.sent_at
    again = publish(chain, ledger, NETUID, "r1", WEIGHTS, wallets["validator"])
    assert again.state is PubState.CONFIRMED and weight_extrinsics(standin) == 1


def test_crash_after_send_is_confirmed_without_resending(standin, ledger, wallets):
    with pytest.raises(Crash):
        publish(CrashAfterSend(standin), ledger, NETUID, "r1", WEIGHTS, wallets["validator"])
    assert history(ledger, NETUID)[0].state is PubState.SENT
    pub = publish(Chain(standin), ledger, NETUID, "r1", WEIGHTS, wallets["validator"])
    assert pub.state is PubState.CONFIRMED and weight_extrinsics(standin) == 1


def test_crash_before_send_waits_out_the_era_then_sends_once(standin, ledger, wallets):
    with pytest.raises(Crash):
        publish(CrashBeforeSend(standin), ledger, NETUID, "r1", WEIGHTS, wallets["validator"], era_blocks=16)
    pending = publish(Chain(standin), ledger, NETUID, "r1", WEIGHTS, wallets["validator"], era_blocks=16)
    assert pending.state is PubState.SENT and weight_extrinsics(standin) == 0
    LocalSubstrate(standin.removeprefix("standin:")).advance(17)
    done = publish(Chain(standin), ledger, NETUID, "r1", WEIGHTS, wallets["validator"], era_blocks=16)
    assert done.state is PubState.CONFIRMED and weight_extrinsics(standin) == 1


def test_chain_refusal_is_final_with_its_reason(tmp_path, wallets, ledger):
    path = tmp_path / "limited.json"
    hotkeys = [wallets[n].hotkey.ss58_address for n in ("validator", "miner1", "miner2")]
    LocalSubstrate.create(path, NETUID, [(h, h, i == 0) for i, h in enumerate(hotkeys)], rate_limit=100)
    chain = Chain(f"standin:{path}")
    assert publish(chain, ledger, NETUID, "r1", WEIGHTS, wallets["validator"]).state is PubState.CONFIRMED
    refused = publish(chain, ledger, NETUID, "r2", {1: 0.5, 2: 0.5}, wallets["validator"])
    assert refused.state is PubState.FAILED and "rate" in refused.reason.lower()


def test_a_round_cannot_change_its_vector(standin, ledger, wallets):
    chain = Chain(standin)
    publish(chain, ledger, NETUID, "r1", WEIGHTS, wallets["validator"])
    with pytest.raises(InputError, match="already journaled"):
        publish(chain, ledger, NETUID, "r1", {1: 1.0}, wallets["validator"])


def test_unregistered_validator_is_refused_before_anything_is_journaled(standin, ledger, wallets):
    with pytest.raises(InputError, match="not registered"):
        publish(Chain(standin), ledger, NETUID, "r1", WEIGHTS, wallets["stranger"])
    assert history(ledger, NETUID) == []
