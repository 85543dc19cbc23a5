"""What the chain layer relies on in its pinned Bittensor, as probe checks (data, not code): an upgrade that renames a
call or a field the chain code makes fails here, before a validator posts through it."""

BITTENSOR_PIN = "11.3.0"

BITTENSOR: list[dict] = [
    {"name": "bittensor version", "kind": "version", "dist": "bittensor", "pin": BITTENSOR_PIN},
    {
        "name": "Wallet",
        "kind": "callable",
        "target": "bittensor.Wallet",
        "params": ["name", "hotkey", "path"],
        "order": True,
    },
    {"name": "Wallet keys", "kind": "attrs", "target": "bittensor.Wallet", "attrs": ["hotkey", "coldkey"]},
    {"name": "Subtensor", "kind": "callable", "target": "bittensor.Subtensor", "params": ["network", "substrate"]},
    {
        "name": "Subtensor.block",
        "kind": "attrs",
        "target": "bittensor.Subtensor",
        "attrs": ["block", "finalized_block", "close"],
    },
    {
        "name": "Subtensor.query",
        "kind": "callable",
        "target": "bittensor.Subtensor.query",
        "params": ["item", "params", "block"],
        "order": True,
    },
    {"name": "Subtensor.constant", "kind": "callable", "target": "bittensor.Subtensor.constant", "params": ["item"]},
    {
        "name": "Subtensor.submit_call",
        "kind": "callable",
        "target": "bittensor.Subtensor.submit_call",
        "params": ["call", "wallet"],
        "order": True,
    },
    {
        "name": "Subtensor.execute",
        "kind": "callable",
        "target": "bittensor.Subtensor.execute",
        "params": ["intent", "wallet"],
        "order": True,
    },
    {
        "name": "subnets.commitments",
        "kind": "callable",
        "target": "bittensor.namespaces.Subnets.commitments",
        "params": ["netuid", "block"],
    },
    {
        "name": "subnets.metagraph",
        "kind": "callable",
        "target": "bittensor.namespaces.Subnets.metagraph",
        "params": ["netuid", "block", "commitments"],
    },
    {
        "name": "Commitments.set_commitment",
        "kind": "callable",
        "target": "bittensor.calls.Commitments.set_commitment",
        "params": ["netuid", "info"],
    },
    {
        "name": "SetWeights intent",
        "kind": "callable",
        "target": "bittensor.intents.weights.SetWeights",
        "params": ["netuid", "weights"],
    },
    {
        "name": "weight helpers",
        "kind": "attrs",
        "target": "bittensor.intents.weights",
        "attrs": ["clip_to_max_weight", "normalize"],
    },
    {
        "name": "SDK errors",
        "kind": "attrs",
        "target": "bittensor",
        "attrs": ["ChainError", "RpcConnectionError", "ConnectionNotReady", "BittensorError", "ExtrinsicResult"],
    },
    {
        "name": "ExtrinsicResult fields",
        "kind": "fields",
        "target": "bittensor.ExtrinsicResult",
        "fields": ["extrinsic_id", "block_hash"],
    },
    {"name": "error_map.ErrorCode", "kind": "attrs", "target": "bittensor.error_map", "attrs": ["ErrorCode"]},
]
