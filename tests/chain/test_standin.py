"""The stand-in chain's state file, read as the SDK's substrate: a file that is not one is a ChainError, which the
client turns into one infrastructure error line."""

from __future__ import annotations

import json

import pytest
from bittensor.result import ChainError

from hotfloat.chain.client import Chain
from hotfloat.chain.standin import LocalSubstrate
from hotfloat.errors import InfrastructureError

HOTKEY = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: [],
        lambda s: {**s, "blocks": []},
        lambda s: {**s, "blocks": "x"},
        lambda s: {**s, "finality_lag": "2"},
        lambda s: {**s, "blocks": [{**s["blocks"][0], "storage": {"Sub.Item": [1]}}]},
    ],
)
def test_a_malformed_state_file_is_a_chain_error(tmp_path, edit):
    path = tmp_path / "chain.json"
    LocalSubstrate.create(path, 7, [(HOTKEY, HOTKEY, True)])
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    with pytest.raises(ChainError, match="is malformed"):
        LocalSubstrate(path).advance(1)
    with pytest.raises(
        InfrastructureError, match=r"^chain: reading the finalized block failed: stand-in chain .* is malformed"
    ):
        Chain(f"standin:{path}").finalized()


def test_a_file_that_is_not_json_is_a_chain_error(tmp_path):
    path = tmp_path / "chain.json"
    path.write_bytes(b"\xff" + b"[" * 10000)
    with pytest.raises(ChainError, match="is not readable JSON"):
        LocalSubstrate(path).advance(1)


def test_a_state_file_that_never_ends_is_refused_without_reading_it(tmp_path):
    """The state file swapped for a FIFO after the chain was opened would block a plain read forever; it is refused
    at once as not a regular file."""
    import os

    path = tmp_path / "chain.json"
    chain = LocalSubstrate.create(path, 7, [(HOTKEY, HOTKEY, True)])
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ChainError, match="is not readable JSON: not a regular file"):
        chain.advance(1)
