"""`hotfloat validator run --follow --chain`: reveals taken in at the top of each cycle, scored by real services,
and the crown table's weights set on the stand-in chain once per window of blocks.

The validator is its own process (as deployed), stopped by SIGTERM; the services run in this process on Unix
sockets. As in tests/services/test_scoring.py, qualification runs with the calibration knob (B runs extra stock
passes), since nothing is faster than the stock engine on a shared CPU.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hotfloat.chain.client import Chain
from hotfloat.chain.miner import package
from hotfloat.chain.publish import PubState, history
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.chain.tables import open_ledger
from hotfloat.ledger import State
from hotfloat.qualify import RuleConfig
from hotfloat.validator.crowns import CHALLENGE_MARGIN
from hotfloat.validator.standings import crowns, scores

pytestmark = pytest.mark.timed  # the cycle scores a CPU qualification that must show the knob's speed-up
NETUID = 7

EVERY = 10
GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""


@pytest.fixture
def stages():
    """Compiler, admission and a calibrated qualification service on Unix sockets: ({name: target}, token file)."""
    from hotfloat_services.serve import start

    from hotfloat.validator import StageConfig

    root = Path(tempfile.mkdtemp(prefix="hf-", dir="/tmp"))
    token = secrets.token_urlsafe(32)
    (root / "token").write_text(token)
    config = StageConfig(
        verify_max_shapes=1,
        verify_dtypes=("fp32",),
        qualify_warmup_passes=1,
        # a third look only runs when two left the interval open: a loaded host (two suites at once) widened it to
        # [-42%, ...] around a 33% gain, and the reproduction FAILed on noise; alone on the 2-core CI machine a
        # reproduction still ended +26.0% [-5.86%, ...] at 128 extra passes, so the knob's gain is made larger
        qualify_rule=RuleConfig(logprob_tol=1e-3, drift_bound=5.0, look_rounds=4, max_looks=3),
        qualify_extra_passes=(("B", 256),),
    )
    running = [
        start(n, str(root / f"{n}.sock"), token=token, config=config)
        for n in ("compiler", "admission", "qualification")
    ]
    yield {r.name: r.target for r in running}, root / "token"
    for r in running:
        r.stop(0)
    shutil.rmtree(root, ignore_errors=True)


def until(what: str, check, proc: subprocess.Popen, log: Path, timeout: float = 240):
    """Polls `check` until it returns something truthy; the validator dying or the timeout fails the test."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert proc.poll() is None, f"the validator exited while waiting for {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)
    return found


def test_follow_takes_in_commitments_scores_them_and_sets_weights_per_window(
    stages, standin, wallets, origin, make_bundle, tmp_path, submit, reveals
):
    targets, token_file = stages
    chain = Chain(standin)
    identities = {}

    def offer(miner: str) -> None:
        bundle, archive = package(make_bundle(GOOD, name=f"{miner}_bundle"))
        submit(chain, wallets[miner], bundle.identity, origin.serve(f"/{miner}.tar.gz", archive))
        identities[miner] = bundle.identity

    offer("miner1")
    db = tmp_path / "validator.db"
    argv = [
        sys.executable,
        "-m",
        "hotfloat.cli",
        "validator",
        "run",
        "--follow",
        "--ledger",
        str(db),
        "--json",
        "--compiler",
        targets["compiler"],
        "--admission",
        targets["admission"],
        "--qualification",
        targets["qualification"],
        "--token-file",
        str(token_file),
        "--chain",
        standin,
        "--netuid",
        str(NETUID),
        "--wallet",
        "validator",
        "--wallet-path",
        wallets["path"],
        "--weights-every",
        str(EVERY),
        "--cafile",
        origin.cafile,
        "--allow-private",
        "--provisional",  # a CPU PASS names no calibration record: crowned here, held by a validator's default
        "crowned",
        "--reveal-after",
        str(reveals.after),
        "--reveal-within",
        str(reveals.within),
    ]
    log = tmp_path / "validator.log"
    with open(log, "w") as errors:  # a file, not a pipe nobody drains while the test polls
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, text=True)
    led = None
    try:
        until("the ledger", db.exists, proc, log)
        led = open_ledger(str(db))

        def confirmed(uids: set[int]):
            return [p for p in history(led, NETUID) if p.state is PubState.CONFIRMED and set(p.weights) == uids]

        def scored(n: int) -> bool:
            ended = led.submissions((State.FAILED, State.NO_DECISION))
            assert not ended, [s.reason for s in ended]
            return len(led.submissions((State.SCORED,))) == n

        # one crowned bundle: its owner (uid 1) gets the whole vector, in the window the crown appeared in
        until("the first bundle to be scored", lambda: scored(1), proc, log)
        [alone] = until("weights for the first crown", lambda: confirmed({1}), proc, log)
        assert alone.u16 == {1: 65535}

        # a second commitment is taken in on a later cycle; its crown waits for the next window of blocks
        offer("miner2")
        until("the second bundle to be scored", lambda: scored(2), proc, log)
        LocalSubstrate(standin.removeprefix("standin:")).advance(EVERY)
        [both] = until("weights for both crowned bundles", lambda: confirmed({1, 2}), proc, log)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        err = log.read_text()
        assert proc.returncode == 0, err
        assert json.loads(out)["counts"]["scored"] == 2

        uid = {identities["miner1"]: 1, identities["miner2"]: 2}
        kept = {led.get(sid).identity: s.score for sid, s in scores(led).items()}
        [crown] = crowns(led).values()
        older, newer = (identities["miner1"], identities["miner2"])
        winner, runner = (newer, older) if kept[newer] > kept[older] + CHALLENGE_MARGIN else (older, newer)
        assert (crown.winner, crown.runner_up) == (winner, runner) and crown.provisional == [winner, runner]
        assert both.weights == pytest.approx({uid[winner]: 0.8, uid[runner]: 0.2})
        row, _ = chain.weights_row(NETUID, 0)
        assert row == {uid[winner]: 65535, uid[runner]: 16384}
        assert alone.round != both.round and "intake: uid 2" in err and "accepted" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        if led is not None:
            led.close()
        chain.close()


def test_the_cycle_publishes_a_signed_feed_of_its_decisions(standin, wallets, origin, packed, policy, submit, tmp_path):
    """After each intake the feed is rebuilt and re-signed when a decision was recorded, and served over HTTPS."""
    import trustme

    from hotfloat.chain.cycle import ChainCycle
    from hotfloat.chain.feed import verify
    from hotfloat.chain.feed_server import FeedServer
    from hotfloat.chain.fetch import FetchPolicy, fetch_body
    from hotfloat.chain.reveal import RevealPolicy

    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "cert.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    server = FeedServer("127.0.0.1", 0, str(tmp_path / "cert.pem"), str(tmp_path / "cert.pem"))
    chain = Chain(standin)
    validator = wallets["validator"].hotkey.ss58_address
    read = FetchPolicy(allow_private=True, cafile=str(tmp_path / "ca.pem"))
    try:
        with open_ledger(str(tmp_path / "v.db")) as led:
            cycle = ChainCycle(
                chain,
                led,
                NETUID,
                wallets["validator"],
                weights_every=1000,
                policy=policy,
                reveals=RevealPolicy(after=10, within=30),
                feed=server,
            )
            identity, archive = packed("soon")
            submit(chain, wallets["miner1"], identity, origin.serve("/soon.tar.gz", archive))  # revealed too early
            cycle()
            first = verify(fetch_body(server.url, read), validator)
            assert [(e.hotkey, e.code.value) for e in first.entries] == [
                (wallets["miner1"].hotkey.ss58_address, "reveal_early")
            ]
            cycle()
            assert (
                verify(fetch_body(server.url, read), validator).built_at == first.built_at
            )  # nothing new: not re-signed
    finally:
        server.close()
        chain.close()
