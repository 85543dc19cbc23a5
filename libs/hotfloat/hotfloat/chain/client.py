"""The one narrow seam to the chain, implemented with the real bittensor SDK: blocks, commitments, hotkeys, weights.

Everything above this module (intake, publication, CLI) speaks plain records and never touches the SDK, so the
stand-in chain (`standin:PATH`) and a real network (`finney`, `test`, `ws://...`) run the same code from here up.
SDK and transport failures become `InfrastructureError`; bad wallets and arguments become `InputError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import bittensor as bt
from bittensor.error_map import ErrorCode
from bittensor.intents.weights import SetWeights, clip_to_max_weight, normalize

from ..errors import InfrastructureError, InputError
from .payload import COMMIT_PREFIX, commit_fields, to_fields
from .standin import LocalSubstrate

U16_MAX = 65535


class ChainRefused(InfrastructureError):
    """The chain (or its transaction pool) refused an extrinsic: it will not apply, so retrying needs a change."""

    grpc_status = "FAILED_PRECONDITION"


@dataclass(frozen=True)
class ChainCommitment:
    """One hotkey's current commitment on a subnet, as read at a (finalized) block."""

    hotkey: str
    uid: int | None
    block: int
    data: str


@dataclass(frozen=True)
class Receipt:
    """A successful extrinsic: where it landed."""

    extrinsic_id: str
    block_hash: str


@contextlib.contextmanager
def _sdk(what: str) -> Iterator[None]:
    """Translates SDK and transport failures at the seam, so callers see hotfloat errors only."""
    try:
        yield
    except (InputError, InfrastructureError):
        raise
    except bt.ChainError as e:
        if e.code in (ErrorCode.UNKNOWN, ErrorCode.INTERNAL):
            raise InfrastructureError(f"chain: {what} failed: {e}") from None
        raise ChainRefused(f"chain: {what} refused ({e.code.value}): {e}") from None
    except (bt.RpcConnectionError, bt.ConnectionNotReady) as e:
        raise InfrastructureError(f"chain: {what} failed: {e}") from None
    except bt.BittensorError as e:
        raise InputError(f"chain: {what} refused: {e}") from None
    except (OSError, TimeoutError, ValueError, KeyError) as e:
        raise InfrastructureError(f"chain: {what} failed: {type(e).__name__}: {e}") from None


def load_wallet(name: str, hotkey: str, path: str | None = None) -> bt.Wallet:
    """A wallet whose hotkey file exists and is readable; the hotkey signs commitments and weights."""
    wallet = bt.Wallet(name, hotkey, path=path or os.path.expanduser("~/.bittensor/wallets"))
    try:
        _ = wallet.hotkey.ss58_address  # loads the keyfile, which is what may fail
    except Exception as e:  # the keyfile layer raises several unrelated types for missing or locked files
        raise InputError(f"wallet {name}/{hotkey}: cannot load the hotkey ({e})") from None
    return wallet


class Chain:
    """A blocking client for one network; `standin:PATH` selects the local stand-in chain at PATH."""

    def __init__(self, network: str):
        self.network = network
        if network.startswith("standin:"):
            with _sdk(f"opening {network}"):
                self._sub = bt.Subtensor("local", substrate=LocalSubstrate(network.removeprefix("standin:")))
            return
        try:
            self._sub = bt.Subtensor(network)
        except ValueError as e:
            raise InputError(f"--network: {e}") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._sub.close()

    def head(self) -> int:
        with _sdk("reading the head block"):
            return int(self._sub.block)

    def finalized(self) -> int:
        with _sdk("reading the finalized block"):
            return int(self._sub.finalized_block)

    def commitments(self, netuid: int, block: int) -> list[ChainCommitment]:
        """Every commitment on the subnet at `block`, in chain order (commit block, then hotkey to break ties)."""
        with _sdk("reading commitments"):
            found = self._sub.subnets.commitments(netuid, block=block)
        rows = [ChainCommitment(c.hotkey, c.uid, int(c.block), c.value or "") for c in found.values() if c.is_revealed]
        return sorted(rows, key=lambda c: (c.block, c.hotkey))

    def hotkeys(self, netuid: int, block: int | None = None) -> list[str]:
        """The subnet's hotkeys indexed by uid (from the metagraph)."""
        with _sdk("reading the metagraph"):
            graph = self._sub.subnets.metagraph(netuid, block=block, commitments=False)
        if graph is None:
            raise InputError(f"subnet {netuid} does not exist on {self.network}")
        return graph.hotkeys

    def commitment_of(self, netuid: int, hotkey: str, block: int) -> ChainCommitment | None:
        """The hotkey's commitment as it stood at `block` (a block-pinned read of the chain's history), if any."""
        if block < 0:
            return None
        with _sdk("reading a commitment"):
            found = self._sub.subnets.commitments(netuid, block=block).get(hotkey)
        return None if found is None else ChainCommitment(hotkey, found.uid, int(found.block), found.value or "")

    def commit(self, netuid: int, raw: bytes, wallet: bt.Wallet) -> Receipt:
        """Posts payload bytes as the hotkey's commitment, refusing locally what the chain's field limit would refuse."""
        fields = to_fields(raw)
        with _sdk("reading Commitments.MaxFields"):
            max_fields = int(self._sub.constant(("Commitments", "MaxFields")))
        if len(fields) > max_fields:
            raise InputError(f"payload needs {len(fields)} data fields; {self.network} allows {max_fields}")
        return self._post(netuid, fields, wallet)

    def _post(self, netuid: int, fields: list[dict[str, str]], wallet: bt.Wallet) -> Receipt:
        with _sdk("posting the commitment"):
            result = self._sub.submit_call(
                bt.calls.Commitments.set_commitment(netuid=netuid, info={"fields": fields}), wallet, signer="hotkey"
            )
        return _receipt(result, "commitment")

    def commit_digest(self, netuid: int, digest_hex: str, wallet: bt.Wallet) -> int:
        """Posts a digest in the pallet's `Sha256` field; returns the block it landed in, as read back."""
        self._post(netuid, commit_fields(digest_hex), wallet)
        return self.read_back(netuid, wallet.hotkey.ss58_address, COMMIT_PREFIX + digest_hex)

    def reveal(self, netuid: int, raw: bytes, wallet: bt.Wallet) -> int:
        """Posts a reveal's bytes; returns the block it landed in, as read back."""
        self.commit(netuid, raw, wallet)
        return self.read_back(netuid, wallet.hotkey.ss58_address, raw.decode())

    def read_back(self, netuid: int, hotkey: str, expected: str) -> int:
        """The block of the hotkey's finalized commitment, which must read back as `expected`: the chain took it."""
        found = self.commitment_of(netuid, hotkey, self.finalized())
        if found is None or found.data != expected:
            got = "nothing" if found is None else repr(found.data[:80])
            raise ChainRefused(f"chain: the commitment did not read back (expected {expected[:80]!r}, read {got})")
        return found.block

    def preview_weights(self, netuid: int, weights: dict[int, float]) -> dict[int, int]:
        """The u16 vector the SDK will send for these weights: the subnet's max-weight clip, then max-upscaled u16."""
        uids = sorted(weights)
        values = [float(weights[u]) for u in uids]
        with _sdk("reading MaxWeightsLimit"):
            cap = self._sub.query(("SubtensorModule", "MaxWeightsLimit"), [netuid])
        cap = U16_MAX if cap is None else int(cap)
        if len(uids) > 1 and cap < U16_MAX and sum(values) > 0:
            values = clip_to_max_weight(values, cap / U16_MAX)
        with _sdk("normalizing weights"):
            out_uids, out_vals = normalize(uids, values)
        return dict(zip(out_uids, out_vals, strict=True))

    def set_weights(self, netuid: int, weights: dict[int, float], wallet: bt.Wallet) -> Receipt:
        """Sets weights through the SDK's `SetWeights` intent (preflight, clip, u16 quantisation, plain or commit-reveal)."""
        with _sdk("setting weights"):
            result = self._sub.execute(SetWeights(netuid=netuid, weights=dict(weights)), wallet)
        return _receipt(result, "set_weights")

    def weights_row(self, netuid: int, uid: int) -> tuple[dict[int, int], int]:
        """A validator's stored u16 weight row and the block it was last updated at (read-back for confirmation)."""
        with _sdk("reading weights"):
            row = self._sub.query(("SubtensorModule", "Weights"), [netuid, uid]) or []
            last = self._sub.query(("SubtensorModule", "LastUpdate"), [netuid]) or []
        return {int(d): int(w) for d, w in row}, int(last[uid]) if uid < len(last) else 0

    def commit_reveal(self, netuid: int) -> bool:
        """Whether the subnet hides weights until a timelocked reveal (then read-back cannot confirm at once)."""
        with _sdk("reading CommitRevealWeightsEnabled"):
            return bool(self._sub.query(("SubtensorModule", "CommitRevealWeightsEnabled"), [netuid]))


def _receipt(result: bt.ExtrinsicResult, what: str) -> Receipt:
    if not result.success:
        raise ChainRefused(f"chain refused the {what} extrinsic: {result.message}")
    return Receipt(extrinsic_id=result.extrinsic_id or "", block_hash=result.block_hash or "")
