"""`hotfloat chain report`: a miner reads a validator's feed over HTTPS, sees its submissions once the signature
verifies, and gets one error line for a feed that does not."""

from __future__ import annotations

import json

import pytest
import trustme

from hotfloat.chain import feed
from hotfloat.chain.codes import Code
from hotfloat.chain.feed_server import FeedServer
from hotfloat.cli.main import main


@pytest.fixture
def served(tmp_path):
    """A feed server on loopback: (server, ca file)."""
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "cert.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    s = FeedServer("127.0.0.1", 0, str(tmp_path / "cert.pem"), str(tmp_path / "cert.pem"))
    yield s, str(tmp_path / "ca.pem")
    s.close()


@pytest.fixture
def keypair():
    from bittensor.keyfiles import Keypair

    return Keypair.create_from_mnemonic(Keypair.generate_mnemonic())


def entry(hotkey: str, code: Code, reason: str) -> feed.Entry:
    return feed.Entry(
        hotkey=hotkey,
        identity="ab" * 32,
        commit_block=5,
        revealed_at=9,
        stage="copies",
        code=code,
        reason=reason,
        evidence="cd" * 32,
        decided_at=1.0,
        secrets={"verify_seed": 42},
    )


def report(capsys, *argv):
    with pytest.raises(SystemExit) as done:
        main(["chain", "report", *argv])
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def test_a_miner_reads_its_report_once_the_signature_verifies(capsys, served, keypair):
    server, cafile = served
    built = feed.Feed(
        validator=keypair.ss58_address,
        netuid=7,
        built_at=1.0,
        entries=[entry("5Miner", Code.COPY_OF, "copy_of:" + "ef" * 32 + ": its op ...")],
    )
    server.update(feed.sign(built, keypair))
    args = ["--feed", server.url, "--validator", keypair.ss58_address, "--cafile", cafile, "--allow-private"]
    code, out, _ = report(capsys, "5Miner", *args, "--json")
    assert code == 0
    [got] = json.loads(out)["entries"]
    assert (got["code"], got["stage"], got["secrets"]) == ("copy_of", "copies", {"verify_seed": 42})
    code, out, _ = report(capsys, "ab" * 32, *args)
    assert code == 0 and "signature verified" in out and "copy_of:" + "ef" * 32 in out
    code, _, err = report(capsys, "5Nobody", *args)
    assert code == 4 and "no decided submission of 5Nobody" in err


def test_a_feed_that_does_not_verify_is_one_error_line(capsys, served, keypair):
    from bittensor.keyfiles import Keypair

    server, cafile = served
    other = Keypair.create_from_mnemonic(Keypair.generate_mnemonic())
    built = feed.Feed(
        validator=keypair.ss58_address, netuid=7, built_at=1.0, entries=[entry("5Miner", Code.SCORED, "ok")]
    )
    server.update(feed.sign(built, other))  # signed by someone who is not the validator
    args = ["--feed", server.url, "--validator", keypair.ss58_address, "--cafile", cafile, "--allow-private"]
    code, out, err = report(capsys, "5Miner", *args)
    assert (
        code == 2
        and out == ""
        and err.startswith("error: the feed's signature does not verify")
        and err.count("\n") == 1
    )
    code, _, err = report(capsys, "5Miner", "--feed", server.url, "--validator", keypair.ss58_address)
    assert (
        code == 2 and err.startswith(f"error: feed {server.url}: ") and "non-public" in err
    )  # loopback refused by default
    code, _, err = report(capsys, "5Miner", "--feed", "http://x.org/feed.json", "--validator", keypair.ss58_address)
    assert code == 2 and "https" in err and err.count("\n") == 1
