"""A poisoned commitment beside good ones (stand-in chain, real SDK, loopback HTTPS origin): each bad one is decided
exactly once with its reason, across validator restarts, and the cycle still takes in the good one and sets weights."""

from __future__ import annotations

import gzip
import io
import tarfile

from hotfloat.chain import intake
from hotfloat.chain.client import Chain
from hotfloat.chain.cycle import ChainCycle
from hotfloat.chain.intake import Outcome, observations
from hotfloat.chain.publish import PubState, history
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.chain.tables import open_ledger
from hotfloat.ledger import ORDER, State
from hotfloat.validator import ScoreEvidence, Settled
from hotfloat.validator.standings import record_scored

NETUID = 7


def deep_manifest_archive() -> bytes:
    """Issue 20's 423-byte tar.gz: a manifest nested 100,000 levels deep."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        for name, data in (("manifest.toml", b"x = " + b"[" * 100_000 + b"]" * 100_000), ("kernels/k.py", b"x = 1\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def test_poisoned_commitments_are_refused_once_and_weights_are_still_set(
    standin, wallets, origin, policy, packed, tmp_path, monkeypatch, qualified_record, submit, reveals
):
    good_identity, good_archive = packed("good")
    fault_identity, fault_archive = packed("fault")
    fault_url = origin.serve("/fault.tar.gz", fault_archive)
    real_fetch = intake.fetch_bundle

    def fetch(url, identity, policy):  # stands for a parser bug nobody has found yet, hit by one commitment only
        if url == fault_url:
            raise RecursionError("maximum recursion depth exceeded")
        return real_fetch(url, identity, policy)

    monkeypatch.setattr(intake, "fetch_bundle", fetch)
    chain = Chain(standin)
    posts = {
        "miner1": (good_identity, origin.serve("/good.tar.gz", good_archive)),
        "miner2": ("ab" * 32, origin.serve("/deep.tar.gz", deep_manifest_archive())),
        "miner3": (fault_identity, fault_url),
    }
    for miner, (identity, url) in posts.items():
        submit(chain, wallets[miner], identity, url)
    hk = {m: wallets[m].hotkey.ss58_address for m in posts}
    db = str(tmp_path / "validator.db")
    reports: list[str] = []

    def cycle_after_restart(score_good: bool = False):
        """A fresh validator process's view: new chain client, ledger and cycle; the chain moves on between runs."""
        LocalSubstrate(standin.removeprefix("standin:")).advance(1)
        with open_ledger(db) as led:
            if score_good:
                [sub] = led.submissions((State.RECEIVED,))
                for seen, to in zip(
                    ORDER[: ORDER.index(State.QUALIFIED) + 1], ORDER[1 : ORDER.index(State.QUALIFIED) + 1], strict=False
                ):
                    sub = led.advance(sub.id, seen, to, "test step")
                settled = Settled(identity=sub.identity, status="PASS", score=0.3, reason="reproduced")
                evidence = ScoreEvidence(status="PASS", reasons=[], record=qualified_record(), runs=[], settled=settled)
                record_scored(led, sub, settled, "activation.silu_and_mul", "reproduced", evidence)
            client = Chain(standin)
            ChainCycle(
                client,
                led,
                NETUID,
                wallets["validator"],
                weights_every=1000,
                policy=policy,
                reveals=reveals,
                report=reports.append,
            )()
            client.close()
            return {k[0]: v for k, v in observations(led, NETUID).items()}, history(led, NETUID)

    seen, pubs = cycle_after_restart()
    assert seen[hk["miner1"]][0] == Outcome.ACCEPTED.value
    assert seen[hk["miner2"]][:2] == (
        Outcome.REFUSED.value,
        "bad archive: manifest.toml: 200004 characters, over the 65536-character limit",
    )
    assert seen[hk["miner3"]][0] == Outcome.RETRY.value and "RecursionError" in seen[hk["miner3"]][1]
    assert pubs == []  # nothing crowned yet

    seen, pubs = cycle_after_restart(score_good=True)
    assert seen[hk["miner3"]][0] == Outcome.RETRY.value and "attempt 2 of 3" in seen[hk["miner3"]][1]
    assert [(p.state, p.weights) for p in pubs] == [(PubState.CONFIRMED, {1: 0.8})]

    seen, _ = cycle_after_restart()
    assert seen[hk["miner3"]] == (
        Outcome.REFUSED.value,
        "fault while deciding, 3 attempts: RecursionError: maximum recursion depth exceeded",
        None,
    )

    final, _ = cycle_after_restart()
    assert final == seen  # nothing decided twice, nothing retried after its final refusal
    with open_ledger(db) as led, led.transaction() as c:
        rows = c.execute("SELECT hotkey, COUNT(*) FROM chain_observations GROUP BY hotkey").fetchall()
    assert sorted(n for _, n in rows) == [1, 1, 1]
    assert chain.weights_row(NETUID, 0)[0] == {1: 65535}
    assert not any("intake:" in r and "Traceback" in r for r in reports)
    chain.close()
