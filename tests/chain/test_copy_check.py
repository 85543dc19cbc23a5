"""The copy check inside intake, on the stand-in chain: a renamed, reformatted copy of an earlier miner's kernel is
refused as `copy_of:<its identity>` whichever was revealed first, a copy of a shipped example as
`copy_of:reference:...`, and the author's own next version is not a copy of itself."""

from __future__ import annotations

import json
import re

import pytest

from hotfloat.bundle import bundle_from_files, load_bundle, pack
from hotfloat.chain.client import Chain
from hotfloat.chain.codes import Code
from hotfloat.chain.intake import Outcome, run_intake
from hotfloat.chain.miner import reveal_bytes
from hotfloat.chain.tables import open_ledger
from hotfloat.cli.miners import ROW_BLOCKS

NETUID = 7
MANIFEST = (
    'bundle_id = "{id}"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    'source = "kernels/{src}.py"\nentry = "silu_and_mul"\ndtypes = ["fp32"]\narchitectures = ["cpu"]\n'
)
RENAMED = re.sub(
    r"\b(_gate_block|scratch|lo|hi|buf|gate|ROWS)\b",
    lambda m: {"_gate_block": "_rows", "scratch": "tmp", "lo": "start", "hi": "stop", "buf": "b", "gate": "g"}.get(
        m.group(1), "CHUNK"
    ),
    ROW_BLOCKS.replace("ROWS = 64", "ROWS = 128  # tuned").replace('"""SwiGLU', '"""My own SwiGLU'),
)


def bundle(name: str, kernel: str, src: str = "silu"):
    b = bundle_from_files(
        {"manifest.toml": MANIFEST.format(id=name, src=src).encode(), f"kernels/{src}.py": kernel.encode()}
    )
    return b.identity, pack(b)


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


def test_a_renamed_copy_is_refused_as_a_copy_of_the_first_committer(
    chain, ledger, wallets, origin, submit, policy, reveals
):
    author, author_archive = bundle("author", ROW_BLOCKS)
    copier, copier_archive = bundle("copier", RENAMED, src="gate")
    assert author != copier
    first = submit(chain, wallets["miner1"], author, origin.serve("/author.tar.gz", author_archive), reveal=False)
    submit(chain, wallets["miner2"], copier, origin.serve("/copier.tar.gz", copier_archive))
    chain.reveal(NETUID, reveal_bytes(first, first.commit_block), wallets["miner1"])  # the author reveals last
    decisions = {d.hotkey: d for d in run_intake(chain, ledger, NETUID, policy, reveals=reveals)}
    assert decisions[wallets["miner1"].hotkey.ss58_address].outcome is Outcome.ACCEPTED
    d = decisions[wallets["miner2"].hotkey.ss58_address]
    assert d.outcome is Outcome.REFUSED and d.code is Code.COPY_OF
    assert d.reason.startswith(f"copy_of:{author}: its op activation.silu_and_mul:default holds 100%")
    assert f"committed by {wallets['miner1'].hotkey.ss58_address} at block {first.commit_block}" in d.reason
    assert [s.identity for s in ledger.submissions()] == [author]
    with ledger.transaction() as db:
        evidence = db.execute("SELECT evidence FROM chain_observations WHERE code = 'copy_of'").fetchone()[0]
    assert json.loads(evidence)["copied"]["of"] == author


def test_a_copy_of_a_shipped_example_is_refused_as_a_reference_copy(
    chain, ledger, wallets, origin, submit, policy, reveals
):
    from pathlib import Path

    example = load_bundle(Path(__file__).resolve().parents[2] / "examples" / "silu_triton")
    files = dict(example.files)
    files["kernels/silu_and_mul.py"] = files["kernels/silu_and_mul.py"].replace(b"BLOCK_T", b"TILE_ROWS")
    files["manifest.toml"] = files["manifest.toml"].replace(b"silu", b"my-fast-gate", 1)
    b = bundle_from_files(files)
    submit(chain, wallets["miner3"], b.identity, origin.serve("/ex.tar.gz", pack(b)))
    d = run_intake(chain, ledger, NETUID, policy, reveals=reveals)[0]
    assert d.outcome is Outcome.REFUSED and d.code is Code.COPY_OF_REFERENCE
    assert d.reason.startswith("copy_of:reference:examples/silu_triton/kernels/silu_and_mul.py: its ")
    assert ledger.submissions() == []


def test_an_authors_next_version_is_not_a_copy_of_itself(chain, ledger, wallets, origin, submit, policy, reveals):
    first, first_archive = bundle("v1", ROW_BLOCKS)
    second, second_archive = bundle("v2", RENAMED)
    submit(chain, wallets["miner1"], first, origin.serve("/v1.tar.gz", first_archive))
    assert run_intake(chain, ledger, NETUID, policy, reveals=reveals)[0].outcome is Outcome.ACCEPTED
    submit(chain, wallets["miner1"], second, origin.serve("/v2.tar.gz", second_archive))
    assert run_intake(chain, ledger, NETUID, policy, reveals=reveals)[0].outcome is Outcome.ACCEPTED
