"""chain/feed.py: every decided submission in the feed with its stage, code, reason, evidence digest and scores;
secrets only once spent; a signature that fails for any altered byte or any other key."""

from __future__ import annotations

import hashlib
import json

import pytest

from hotfloat.chain import feed
from hotfloat.chain.codes import Code
from hotfloat.chain.tables import open_ledger
from hotfloat.errors import InputError
from hotfloat.ledger import State
from hotfloat.record import Record

NETUID = 7
SEED = 918_273_645
"""Verify seeds here are SEED + submission id: digits no timestamp or digest in the feed contains by chance."""


class Stage(Record):
    """Stands for a stage's evidence: only its JSON shape matters to the feed."""

    status: str
    reasons: list[str]
    record: dict
    runs: list[dict] | None = None


def observe(led, hotkey, identity, status, code, reason, sid=None, commit=5, evidence=None):
    with led.transaction() as db:
        db.execute(
            "INSERT INTO chain_observations (netuid, hotkey, block, digest, uid, identity, url, payment, status, reason,"
            " attempts, submission_id, decided_at, commit_block, code, evidence) VALUES (?, ?, ?, ?, 1, ?, 'u', NULL,"
            " ?, ?, 1, ?, 1.0, ?, ?, ?)",
            (NETUID, hotkey, commit + 3, "d" * 64, identity, status, reason, sid, commit, code, evidence),
        )


@pytest.fixture
def led(tmp_path, make_bundle):
    """A ledger with one bundle of each fate: refused at intake, copy, failed at admission, scored, still judged."""
    from hotfloat.chain.miner import package

    led = open_ledger(str(tmp_path / "v.db"))
    observe(led, "hk-reveal", None, "refused", Code.REVEAL_EARLY.value, "revealed too early: at block 8\nsecond line")
    observe(led, "hk-copy", "c" * 64, "refused", Code.COPY_OF.value, "copy_of:" + "a" * 64, evidence='{"copied":{}}')
    sids = {}
    for n, name in enumerate(("failed", "scored", "pending")):
        _, archive = package(make_bundle(name=name))
        sub, _ = led.receive(archive, submitter=f"hk-{name}")
        sids[name] = sub.id
        observe(led, f"hk-{name}", sub.identity, "accepted", "", "enqueued", sub.id, commit=10 + n)
    for name in sids:
        sub = led.get(sids[name])
        for to in (State.SCANNED, State.BUILT):
            sub = led.advance(sub.id, sub.state, to, "ok", Stage(status="PASS", reasons=[], record={}))
        admit = Stage(status="PASS", reasons=[], record={"verify": {"seed": SEED + sub.id}})
        if name == "failed":
            led.advance(sub.id, sub.state, State.FAILED, "admit: out: 3 of 64 elements outside atol", admit)
            continue
        sub = led.advance(sub.id, sub.state, State.ADMITTED, "ok", admit)
        qualify = Stage(status="PASS", reasons=[], record={"workload": {"seed": SEED + 100 + sub.id}, "score": 0.04})
        sub = led.advance(sub.id, sub.state, State.QUALIFIED, "ok", qualify)
        if name == "scored":
            runs = [{"seed": 7001, "score": 0.04}, {"seed": 7002, "score": 0.03}]
            led.advance(
                sub.id, sub.state, State.SCORED, "reproduced", Stage(status="PASS", reasons=[], record={}, runs=runs)
            )
            with led.transaction() as db:
                db.execute(
                    "INSERT INTO scores (submission_id, slot_set, score, at) VALUES (?, 's', 0.03, 1)", (sub.id,)
                )
    yield led
    led.close()


def test_every_decided_submission_is_in_the_feed_and_nothing_still_judged(led):
    built = feed.build(led, NETUID, "validator-hk")
    by = {e.hotkey: e for e in built.entries}
    assert set(by) == {"hk-reveal", "hk-copy", "hk-failed", "hk-scored"}
    assert (by["hk-reveal"].stage, by["hk-reveal"].code) == ("intake", Code.REVEAL_EARLY)
    assert by["hk-reveal"].reason == "revealed too early: at block 8 second line"
    assert by["hk-reveal"].evidence == "d" * 64  # the digest of the committed bytes it rests on
    assert (by["hk-copy"].stage, by["hk-copy"].code) == ("copies", Code.COPY_OF)
    assert by["hk-copy"].evidence == hashlib.sha256(b'{"copied":{}}').hexdigest()
    failed = by["hk-failed"]
    assert (failed.stage, failed.code, failed.scores) == ("admit", Code.VERIFY_FAILED, None)
    assert failed.secrets == {"verify_seed": SEED + led.submissions()[0].id}
    scored = by["hk-scored"]
    assert (scored.stage, scored.code, scored.scores.settled, scored.scores.runs) == (
        "score",
        Code.SCORED,
        0.03,
        [0.04, 0.03],
    )
    assert scored.secrets["workload_seed_0"] == 7001 and scored.secrets["workload_seed_1"] == 7002
    with led.transaction() as db:
        stored = db.execute(
            "SELECT evidence FROM transitions WHERE to_state = 'scored' ORDER BY id DESC LIMIT 1"
        ).fetchone()[0]
    assert scored.evidence == hashlib.sha256(stored.encode()).hexdigest()
    assert [e.commit_block for e in built.entries] == sorted(e.commit_block for e in built.entries)


def test_secrets_of_a_run_still_going_are_not_published(led):
    built = feed.build(led, NETUID, "validator-hk")
    pending = [s for s in led.submissions() if s.submitter == "hk-pending"][0]
    assert "hk-pending" not in {e.hotkey for e in built.entries}
    published = {v for e in built.entries for v in e.secrets.values()}
    assert {7001, 7002} <= published  # the scored submission's runs are spent: out
    for secret in (SEED + pending.id, SEED + 100 + pending.id):  # the one still being judged: its verify and run seeds
        assert secret not in published and str(secret) not in feed.canonical(built).decode()


def test_the_signature_verifies_against_the_validator_and_nothing_else(led, wallets):
    hotkey = wallets["validator"].hotkey
    raw = feed.sign(feed.build(led, NETUID, hotkey.ss58_address), hotkey)
    assert len(feed.verify(raw, hotkey.ss58_address).entries) == 4
    with pytest.raises(InputError, match="does not verify against"):
        feed.verify(raw, wallets["miner1"].hotkey.ss58_address)
    tampered = raw.replace(b"verify_failed", b"scored\\u0000")
    with pytest.raises(InputError, match="does not verify"):
        feed.verify(tampered, hotkey.ss58_address)
    impostor = feed.sign(feed.build(led, NETUID, hotkey.ss58_address), wallets["miner1"].hotkey)
    with pytest.raises(InputError, match="does not verify"):
        feed.verify(impostor, hotkey.ss58_address)
    relabelled = feed.sign(feed.build(led, NETUID, "someone-else"), hotkey)
    with pytest.raises(InputError, match="names validator someone-else"):
        feed.verify(relabelled, hotkey.ss58_address)


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"", "not a signed feed"),
        (b"[" * 10000, "not a signed feed"),
        (json.dumps({"feed": "{}", "signature": "0x" + "0" * 128, "x": 1}).encode(), "unknown key"),
        (json.dumps({"feed": "{}", "signature": "nothex"}).encode(), "signature"),
    ],
)
def test_hostile_feeds_are_refused_in_one_line(raw, why, wallets):
    with pytest.raises(InputError, match=why) as e:
        feed.verify(raw, wallets["validator"].hotkey.ss58_address)
    assert "\n" not in str(e.value)


def test_a_validly_signed_feed_that_is_not_a_feed_is_refused(wallets):
    hotkey = wallets["validator"].hotkey
    data = b'{"entries":"no"}'
    raw = feed.SignedFeed(feed=data.decode(), signature="0x" + bytes(hotkey.sign(data)).hex()).model_dump_json()
    with pytest.raises(InputError, match="malformed"):
        feed.verify(raw.encode(), hotkey.ss58_address)
