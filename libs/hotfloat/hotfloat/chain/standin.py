"""A local stand-in for the subtensor chain, behind the SDK's own `Substrate` seam.

No subtensor node is installable here and bittensor 11 ships no mock, so the real SDK (`bittensor.Subtensor`, its
reads, `SetWeights` intent, executor and metagraph decoding) runs unchanged against this object injected as
`substrate=`. It keeps what those code paths touch: per-block storage snapshots (reads are pinned to a block hash),
a finalized head that lags the best head, signed submissions (the signer must hold the private key), and the
dispatch rules of the two extrinsics hotfloat sends (`standin_runtime`). State lives in one JSON file under an
exclusive lock, so several processes (a miner CLI, a validator CLI, a test) see one chain. Not modelled: SCALE encoding, fees and deposits, commit-reveal weights,
timelocked commitments, the epoch/emission math and networking.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from bittensor.balance import Balance
from bittensor.keyfiles import Keypair
from bittensor.result import ChainError, ExtrinsicResult

from ..bundle.bounded import read_file
from .standin_runtime import U16_MAX, dispatch, key, metagraph

STATE_MAX_BYTES = 256 << 20
"""The stand-in's state file is read whole under a lock; a file named in its place that never ends (a FIFO,
/dev/zero) or is larger than any chain a test builds is refused instead."""


def _hash(number: int) -> str:
    return "0x" + hashlib.sha256(f"hotfloat-standin-block-{number}".encode()).hexdigest()


class LocalSubstrate:
    """A file-backed, in-process chain implementing the SDK's `Substrate` protocol for the calls hotfloat makes."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.token_symbols: dict[int, str] = {}
        if not self.path.is_file():
            raise ChainError(f"stand-in chain {self.path} does not exist (create it with `hotfloat chain standin`)")

    # Genesis ---------------------------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        netuid: int,
        neurons: list[tuple[str, str, bool]],
        *,
        finality_lag: int = 2,
        max_fields: int = 8,
        rate_limit: int = 0,
        max_weight_limit: int = U16_MAX,
    ) -> "LocalSubstrate":
        """Writes a genesis block with one subnet whose uids are `neurons` = (hotkey, coldkey, validator_permit)."""
        storage: dict[str, dict[str, Any]] = {}

        def put(item: str, params: list, value: Any) -> None:
            storage.setdefault(item, {})[key(params)] = value

        put("SubtensorModule.NetworksAdded", [netuid], True)
        put("SubtensorModule.Tempo", [netuid], 360)
        put("SubtensorModule.TokenSymbol", [netuid], "0x" + "τ".encode().hex())
        put("SubtensorModule.WeightsSetRateLimit", [netuid], rate_limit)
        put("SubtensorModule.MaxWeightsLimit", [netuid], max_weight_limit)
        put("SubtensorModule.MinAllowedWeights", [netuid], 0)
        put("SubtensorModule.CommitRevealWeightsEnabled", [netuid], False)
        put("SubtensorModule.SubnetEpochConsensus", [netuid], "Yuma")
        put("SubtensorModule.LastUpdate", [netuid], [0] * len(neurons))
        put("SubtensorModule.ValidatorPermit", [netuid], [p for _, _, p in neurons])
        for uid, (hotkey, coldkey, _) in enumerate(neurons):
            put("SubtensorModule.Uids", [netuid, hotkey], uid)
            put("SubtensorModule.Keys", [netuid, uid], hotkey)
            put("SubtensorModule.Owner", [hotkey], coldkey)
        state = {
            "constants": {"Commitments.MaxFields": max_fields, "Aura.SlotDuration": 12000},
            "finality_lag": finality_lag,
            "subnets": [netuid],
            "blocks": [{"number": 0, "storage": storage, "extrinsics": []}],
        }
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, path)
        return cls(path)

    # State -----------------------------------------------------------------------------------------------------

    @contextmanager
    def _state(self, write: bool = False):
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
            state = self._load()
            yield state
            if write:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(state))
                os.replace(tmp, self.path)

    def _load(self) -> dict:
        """The chain's state; a file that is not one (truncated, hand-edited, another file) is a ChainError, since
        every read below indexes it as `create` wrote it."""
        try:
            state = json.loads(read_file(self.path, STATE_MAX_BYTES))
        except (OSError, ValueError, RecursionError) as e:
            raise ChainError(f"stand-in chain {self.path} is not readable JSON: {e}") from None
        blocks = state.get("blocks") if isinstance(state, dict) else None
        if not (
            isinstance(blocks, list)
            and blocks
            and isinstance(state.get("constants"), dict)
            and isinstance(state.get("finality_lag"), int)
            and isinstance(state.get("subnets"), list)
            and all(
                isinstance(b, dict)
                and isinstance(b.get("number"), int)
                and isinstance(b.get("extrinsics"), list)
                and isinstance(b.get("storage"), dict)
                and all(isinstance(v, dict) for v in b["storage"].values())
                for b in blocks
            )
        ):
            raise ChainError(
                f"stand-in chain {self.path} is malformed (not what `hotfloat chain standin create` wrote)"
            )
        return state

    def _block(self, state: dict, block_hash: Optional[str]) -> dict:
        if block_hash is None:
            return state["blocks"][-1]
        for b in reversed(state["blocks"]):
            if _hash(b["number"]) == block_hash:
                return b
        raise ChainError(f"unknown block hash {block_hash}")

    def advance(self, blocks: int = 1) -> int:
        """Produces empty blocks (time passing); returns the new head."""
        with self._state(write=True) as state:
            for _ in range(blocks):
                self._new_block(state)
            return state["blocks"][-1]["number"]

    @staticmethod
    def _new_block(state: dict) -> dict:
        head = state["blocks"][-1]
        block = {"number": head["number"] + 1, "storage": copy.deepcopy(head["storage"]), "extrinsics": []}
        state["blocks"].append(block)
        return block

    # Substrate protocol: lifecycle -------------------------------------------------------------------

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # Substrate protocol: reads -------------------------------------------------------------------------------------

    async def block_hash(self, block: Optional[int] = None) -> str:
        with self._state() as state:
            number = state["blocks"][-1]["number"] if block is None else block
            if not 0 <= number <= state["blocks"][-1]["number"]:
                raise ChainError(f"block {number} does not exist")
            return _hash(number)

    async def block_number(self) -> int:
        with self._state() as state:
            return state["blocks"][-1]["number"]

    async def finalized_block_number(self) -> int:
        with self._state() as state:
            return max(0, state["blocks"][-1]["number"] - state["finality_lag"])

    async def block_time(self) -> float:
        return 12.0

    async def query(
        self, module: str, storage_function: str, params: Optional[list] = None, block_hash: Optional[str] = None
    ) -> Any:
        with self._state() as state:
            item = self._block(state, block_hash)["storage"].get(f"{module}.{storage_function}", {})
            return copy.deepcopy(item.get(key(params)))

    async def query_map(
        self, module: str, storage_function: str, params: Optional[list] = None, block_hash: Optional[str] = None
    ) -> list[tuple[Any, Any]]:
        prefix = list(params or [])
        with self._state() as state:
            item = self._block(state, block_hash)["storage"].get(f"{module}.{storage_function}", {})
            rows = []
            for raw_key, value in item.items():
                parts = json.loads(raw_key)
                if parts[: len(prefix)] == prefix and len(parts) > len(prefix):
                    rest = parts[len(prefix) :]
                    rows.append((rest[0] if len(rest) == 1 else tuple(rest), copy.deepcopy(value)))
            return rows

    async def runtime_call(self, api: str, method: str, params: list, block_hash: Optional[str] = None) -> Any:
        if (api, method) != ("SubnetInfoRuntimeApi", "get_metagraph"):
            raise ChainError(f"the stand-in chain does not implement runtime API {api}.{method}")
        netuid = int(params[0])
        with self._state() as state:
            block = self._block(state, block_hash)
            return metagraph(block, netuid) if netuid in state["subnets"] else None

    async def constant(self, module: str, name: str) -> Any:
        with self._state() as state:
            if f"{module}.{name}" not in state["constants"]:
                raise ChainError(f"the stand-in chain has no constant {module}.{name}")
            return state["constants"][f"{module}.{name}"]

    # Substrate protocol: calls and writes -----------------------------------------------------------------------

    async def compose(self, call) -> dict:
        module, function, params = call
        return {"call_module": module, "call_function": function, "call_args": copy.deepcopy(params)}

    async def estimate_fee(self, call, keypair) -> Balance:
        return Balance.from_rao(0)

    async def submit(
        self,
        call,
        keypair,
        *,
        nonce: Optional[int] = None,
        period: Optional[int] = None,
        wait_for_inclusion: bool = True,
        wait_for_finalization: bool = True,
    ) -> ExtrinsicResult:
        """Checks the signature, dispatches the call into a new block, and reports like the RPC backend does."""
        signed = json.dumps(call, sort_keys=True, default=str).encode()
        try:
            signature = keypair.sign(signed)
        except Exception as e:  # a public-only keypair cannot sign
            return _failed(f"cannot sign: {e}", "BadSigner")
        if not Keypair(ss58_address=keypair.ss58_address).verify(signed, signature):
            return _failed("bad signature", "BadProof")
        with self._state(write=True) as state:
            block = self._new_block(state)
            before = copy.deepcopy(block["storage"])
            try:
                error = dispatch(state, block, call, keypair.ss58_address)
            except (KeyError, TypeError, ValueError) as e:
                error = ("BadCall", f"malformed call arguments: {e}")
            if error:
                block["storage"] = before
            index = len(block["extrinsics"])
            block["extrinsics"].append({"call": call, "signer": keypair.ss58_address, "error": error})
            if wait_for_finalization:
                for _ in range(state["finality_lag"]):
                    self._new_block(state)
        if error:
            return ExtrinsicResult(
                success=False,
                message=error[1],
                block_hash=_hash(block["number"]),
                extrinsic_id=f"{block['number']}-{index:04d}",
                error=ChainError(error[1], error[0]),
            )
        return ExtrinsicResult(
            success=True,
            message="Success",
            block_hash=_hash(block["number"]),
            extrinsic_id=f"{block['number']}-{index:04d}",
            fee=Balance.from_rao(0),
        )


def _failed(message: str, name: str) -> ExtrinsicResult:
    return ExtrinsicResult(success=False, message=message, error=ChainError(message, name))
