"""The stand-in chain's runtime: what the pallets do with the two extrinsics hotfloat sends, and the metagraph runtime
API the SDK reads. `Commitments.set_commitment` needs a registered hotkey, at most MaxFields fields, `Raw<N>` sizes
that match their data and 32-byte hash fields (`Sha256`, the digest a miner commits before its reveal); `SubtensorModule.set_mechanism_weights` needs a registered signer, unique in-range uids, u16
weights, the rate limit and the max-weight limit. Pure functions over one block's storage, apart from the file and
lock that `standin.LocalSubstrate` keeps."""

from __future__ import annotations

import json
from typing import Any

GLOBAL_MAX_SUBNET_COUNT = 4096
U16_MAX = 65535


def key(params: list | None) -> str:
    """A storage map's key: the params as compact JSON, so the state file stays plain JSON."""
    return json.dumps(list(params or []), separators=(",", ":"))


def dispatch(state: dict, block: dict, call: dict, signer: str) -> tuple[str, str] | None:
    """Applies one call to the new block's storage; returns (error name, message) when the chain would refuse it."""
    storage, args = block["storage"], call["call_args"]
    what = (call["call_module"], call["call_function"])
    if what == ("Commitments", "set_commitment"):
        netuid, fields = int(args["netuid"]), list((args.get("info") or {}).get("fields") or [])
        if storage.get("SubtensorModule.Uids", {}).get(key([netuid, signer])) is None:
            return "AccountNotAllowedCommit", "the signing hotkey is not registered on the subnet"
        if len(fields) > state["constants"]["Commitments.MaxFields"]:
            return "TooManyFieldsInCommitmentInfo", "too many fields in the commitment"
        if not all(_data_field(f) for f in fields):
            return (
                "BadCommitmentField",
                "commitment fields must be Raw<N> (N <= 128, matching the data) or 32-byte hashes",
            )
        storage.setdefault("Commitments.CommitmentOf", {})[key([netuid, signer])] = {
            "block": block["number"],
            "deposit": 0,
            "info": {"fields": fields},
        }
        return None
    if what == ("SubtensorModule", "set_mechanism_weights"):
        return _set_weights(storage, block["number"], args, signer)
    return "CallNotSupported", f"the stand-in chain does not dispatch {what[0]}.{what[1]}"


HASH_FIELDS = ("BlakeTwo256", "Sha256", "Keccak256", "ShaThree256")
"""The pallet's hash variants of `Data`: 32 bytes each."""


def _data_field(field: Any) -> bool:
    """One `{"Raw<N>": "0x..."}` entry whose N is the byte length of its data (at most 128), or one 32-byte hash
    variant `{"Sha256": "0x..."}`."""
    if not isinstance(field, dict) or len(field) != 1:
        return False
    [(variant, value)] = field.items()
    if not isinstance(value, str):
        return False
    size = len(bytes.fromhex(value.removeprefix("0x")))
    return (variant == f"Raw{size}" and size <= 128) or (variant in HASH_FIELDS and size == 32)


def _set_weights(storage: dict, number: int, args: dict, signer: str) -> tuple[str, str] | None:
    netuid, mecid = int(args["netuid"]), int(args["mecid"])
    dests, values = [int(d) for d in args["dests"]], [int(w) for w in args["weights"]]
    uid = storage.get("SubtensorModule.Uids", {}).get(key([netuid, signer]))
    if uid is None:
        return "HotKeyNotRegisteredInSubNet", "the signing hotkey is not registered on the subnet"
    n = len(storage["SubtensorModule.ValidatorPermit"][key([netuid])])
    if len(dests) != len(values) or len(set(dests)) != len(dests) or any(not 0 <= d < n for d in dests):
        return "UidVecContainInvalidOne", "weights name duplicate or unknown uids"
    if any(not 0 <= w <= U16_MAX for w in values):
        return "InvalidWeights", "weights must be u16"
    index = mecid * GLOBAL_MAX_SUBNET_COUNT + netuid
    last = storage["SubtensorModule.LastUpdate"].setdefault(key([index]), [0] * n)
    limit = storage["SubtensorModule.WeightsSetRateLimit"][key([netuid])]
    if limit and last[uid] and number - last[uid] < limit:
        return "SettingWeightsTooFast", "weights were set too recently"
    cap = storage["SubtensorModule.MaxWeightsLimit"][key([netuid])]
    if len(dests) > 1 and sum(values) and max(values) * U16_MAX > cap * sum(values):
        return "MaxWeightExceeded", "a weight exceeds the subnet's max weight limit"
    storage.setdefault("SubtensorModule.Weights", {})[key([index, uid])] = [
        [d, w] for d, w in zip(dests, values, strict=True)
    ]
    last[uid] = number
    return None


def metagraph(block: dict, netuid: int) -> dict:
    """The subset of `SubnetInfoRuntimeApi.get_metagraph` that the SDK's metagraph decoder requires."""
    storage = block["storage"]
    keys, owners = storage.get("SubtensorModule.Keys", {}), storage.get("SubtensorModule.Owner", {})
    hotkeys: list[str] = []
    while (hotkey := keys.get(key([netuid, len(hotkeys)]))) is not None:
        hotkeys.append(hotkey)
    coldkeys = [owners.get(key([h]), "") for h in hotkeys]
    return {
        "netuid": netuid,
        "name": list(b"hotfloat"),
        "symbol": list("τ".encode()),
        "block": block["number"],
        "tempo": 360,
        "last_step": 0,
        "blocks_since_last_step": block["number"],
        "network_registered_at": 0,
        "owner_hotkey": hotkeys[0] if hotkeys else "",
        "owner_coldkey": coldkeys[0] if coldkeys else "",
        "num_uids": len(hotkeys),
        "max_uids": 256,
        "hotkeys": hotkeys,
        "coldkeys": coldkeys,
        "active": [True] * len(hotkeys),
        "validator_permit": storage["SubtensorModule.ValidatorPermit"][key([netuid])],
        "last_update": storage["SubtensorModule.LastUpdate"][key([netuid])],
    }
