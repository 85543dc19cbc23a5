"""The done-when loop through the real CLI entry point (`main`, in-process: each `hotfloat` process start costs
seconds of imports on CI): miner package + submit (a digest) + reveal -> validator intake -> fetch ->
scan (the library stage, as the services would run it) -> crowns -> weights, on the stand-in chain and a loopback
HTTPS origin; a hostile miner in the same round is refused with a reason and the ledger stays consistent."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest

from hotfloat.bundle import unpack
from hotfloat.chain.tables import open_ledger
from hotfloat.cli.main import main
from hotfloat.ledger import State
from hotfloat.scan import ScanReport, scan_bundle
from hotfloat.validator import StageEvidence
from hotfloat.verdict import Status

NETUID = "7"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def hf(capsys):
    """Runs `hotfloat ARGS...` through `main`, returning its exit code and captured output."""

    def run(*args: str, ok: bool = True) -> Run:
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            main(list(args))
        out, err = capsys.readouterr()
        result = Run(e.value.code or 0, out, err)
        assert (result.returncode == 0) == ok, result
        return result

    return run


def test_miner_to_weights_loop(hf, tmp_path, wallets, origin, make_bundle):
    path = tmp_path / "chain.json"
    network = f"standin:{path}"
    who = {n: wallets[n].hotkey.ss58_address for n in ("validator", "miner1", "miner2", "miner3")}
    hf(
        "chain",
        "standin",
        "create",
        str(path),
        "--netuid",
        NETUID,
        "--neuron",
        f"{who['validator']}:validator",
        "--neuron",
        who["miner1"],
        "--neuron",
        who["miner2"],
        "--neuron",
        who["miner3"],
    )
    wallet = ["--wallet-path", wallets["path"], "--hotkey", "default", "--netuid", NETUID, "--network", network]

    offers, reveal_files = {}, {}
    for miner in ("miner1", "miner2"):
        bundle = make_bundle(name=f"{miner}_bundle")
        out = json.loads(
            hf("chain", "package", str(bundle), "--out", str(tmp_path / f"{miner}.tar.gz"), "--json").stdout
        )
        url = origin.serve(f"/{miner}.tar.gz", (tmp_path / f"{miner}.tar.gz").read_bytes())
        dry = json.loads(
            hf("chain", "submit", str(bundle), "--url", url, "--wallet", miner, *wallet, "--dry-run").stdout
        )
        assert (dry["h"], dry["u"], dry["v"], dry["c"], len(dry["s"])) == (out["identity"], url, 2, 0, 32)
        posted = json.loads(
            hf("chain", "submit", str(bundle), "--url", url, "--wallet", miner, *wallet, "--json").stdout
        )
        assert posted["identity"] == out["identity"] and posted["commit_block"] > 0
        assert oct(os.stat(posted["reveal_file"]).st_mode & 0o777) == "0o600"  # the salt is a secret until the reveal
        assert path.read_text().count(url) == 0  # only the digest went on chain
        offers[miner], reveal_files[miner] = out["identity"], posted["reveal_file"]
    hostile = make_bundle(name="thief")
    thief = json.loads(
        hf(
            "chain",
            "submit",
            str(hostile),
            "--url",
            origin.url("/miner1.tar.gz"),
            "--wallet",
            "miner3",
            *wallet,
            "--reveal-file",
            str(tmp_path / "thief.json"),
            "--json",
        ).stdout
    )
    reveal = ["--wallet-path", wallets["path"], "--network", network, "--after", "3"]
    early = hf("chain", "reveal", reveal_files["miner1"], "--wallet", "miner1", *reveal[:-1], "10", ok=False)
    assert early.returncode == 2 and early.stderr.startswith("error: too early: the head is at block")
    sealed = json.loads(hf("chain", "status", "--netuid", NETUID, "--network", network, "--json").stdout)
    assert {c["view"] for c in sealed["commitments"]} == {"a digest, awaiting its reveal"}
    assert all(c["identity"] is None and c["url"] == "" for c in sealed["commitments"])
    hf("chain", "standin", "advance", str(path), "3")
    for miner, file in [*reveal_files.items(), ("miner3", thief["reveal_file"])]:
        done = json.loads(hf("chain", "reveal", file, "--wallet", miner, *reveal, "--json").stdout)
        assert done["revealed_at"] >= done["commit_block"] + 3
    wrong = hf("chain", "reveal", reveal_files["miner1"], "--wallet", "miner2", *reveal, ok=False)
    assert wrong.returncode == 2 and "opens " + who["miner1"] in wrong.stderr

    ledger_path = str(tmp_path / "validator.db")
    intake = [
        "--netuid",
        NETUID,
        "--network",
        network,
        "--ledger",
        ledger_path,
        "--cafile",
        origin.cafile,
        "--allow-private",
        "--deadline",
        "30",
        "--reveal-after",
        "3",
    ]
    decisions = {d["hotkey"]: d for d in json.loads(hf("chain", "intake", *intake, "--json").stdout)}
    assert decisions[who["miner1"]]["outcome"] == decisions[who["miner2"]]["outcome"] == "accepted"
    assert decisions[who["miner3"]]["outcome"] == "refused"
    assert "identity mismatch" in decisions[who["miner3"]]["reason"]
    assert json.loads(hf("chain", "intake", *intake, "--json").stdout) == []

    status = json.loads(
        hf("chain", "status", "--netuid", NETUID, "--network", network, "--ledger", ledger_path, "--json").stdout
    )
    assert {c["hotkey"]: c["view"] for c in status["commitments"]} == {
        who["miner1"]: "accepted",
        who["miner2"]: "accepted",
        who["miner3"]: "refused",
    }

    with open_ledger(ledger_path) as ledger:
        subs = ledger.submissions()
        assert sorted(s.identity for s in subs) == sorted(offers.values())
        for sub in subs:
            report = scan_bundle(unpack(ledger.archive(sub.id)))
            assert report.clean
            ledger.advance(
                sub.id,
                State.RECEIVED,
                State.SCANNED,
                "scan clean",
                StageEvidence[ScanReport](status=Status.PASS, reasons=[], record=report),
            )
        assert {s.submitter: s.identity for s in ledger.submissions()} == {who[m]: offers[m] for m in offers}

    crowns = [
        {
            "winner": offers["miner2"],
            "runner_up": offers["miner1"],
            "reason": "settled",
            "weights": {offers["miner2"]: 0.8, offers["miner1"]: 0.2},
        }
    ]
    crowns_file = tmp_path / "crowns.json"
    crowns_file.write_text(json.dumps(crowns))
    weights = ["--crowns", str(crowns_file), "--wallet", "validator", *wallet, "--ledger", ledger_path, "--json"]
    preview = json.loads(hf("chain", "weights", *weights, "--dry-run").stdout)
    assert preview["u16"] == {"2": 65535, "1": 16384} and preview["dry_run"]
    done = json.loads(hf("chain", "weights", *weights, "--every", "100000").stdout)
    assert done["state"] == "confirmed" and done["extrinsic"] and done["round"].startswith("every-100000-")
    again = json.loads(hf("chain", "weights", *weights, "--every", "100000").stdout)
    assert again["state"] == "confirmed" and again["round"] == done["round"]
    state = json.loads(path.read_text())
    sets = [
        x for b in state["blocks"] for x in b["extrinsics"] if x["call"]["call_function"] == "set_mechanism_weights"
    ]
    assert len(sets) == 1 and sets[0]["call"]["call_args"]["dests"] == [1, 2]


def test_cli_refuses_bad_input_with_one_error_line(hf, tmp_path, make_bundle):
    bundle = make_bundle()
    p = hf(
        "chain", "submit", str(bundle), "--url", "http://example.org/a.tar.gz", "--netuid", "1", "--dry-run", ok=False
    )
    assert p.returncode == 2 and p.stderr.startswith("error: commitment refused: u: url must use https")
    assert "Traceback" not in p.stderr
    bad = tmp_path / "crowns.json"
    bad.write_text('[{"runner_up": null}]')
    p = hf(
        "chain",
        "weights",
        "--crowns",
        str(bad),
        "--netuid",
        "1",
        "--network",
        f"standin:{tmp_path}/none.json",
        "--ledger",
        str(tmp_path / "l.db"),
        "--dry-run",
        ok=False,
    )
    assert p.returncode == 2 and "winner" in p.stderr and "Traceback" not in p.stderr
    p = hf("chain", "status", "--netuid", "1", "--network", f"standin:{tmp_path}/none.json", ok=False)
    assert p.returncode == 3 and p.stderr.startswith("error: chain:") and "does not exist" in p.stderr


def test_every_chain_command_has_help(hf):
    for cmd in ("package", "submit", "reveal", "report", "intake", "status", "weights", "standin"):
        out = hf("chain", cmd, "--help").stdout
        assert "Usage:" in out and len(out.splitlines()) > 3
