"""The transformers worker on CUDA in graph mode answers counts, twin and audit (run by tools/device/audit_check.py):
one worker process spoken to over its socket, as the qualification does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from audit_graph import report

from hotfloat.qualify.audit import audit_record

REPO = Path(__file__).resolve().parents[2]


def check_engine(root: Path) -> None:
    from hotfloat.bundle import load_bundle
    from hotfloat.qualify import wire

    ours, theirs = socket.socketpair()
    env = {**os.environ, "HOTFLOAT_WORKER_HOME": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "hotfloat.qualify.engines.worker"], stdin=theirs.fileno(), env=env)
    theirs.close()
    cand = REPO / "examples/silu_triton"
    try:
        wire.send(
            ours,
            {
                "kind": "transformers",
                "preset": "qwen2-0.5b",
                "dtype": "bf16",
                "device": "cuda",
                "weight_seed": 0,
                "decode": "graph",
                "bundle": None,
                "identity": None,
                "twin_of": str(cand),
                "twin_identity": load_bundle(cand).identity,
                "warmup": [[[[5] * 40] * 4, [8] * 4]],
                "audit_key": 5,
                "audit_rate": 0.25,
                "audit_rows": 8,
                "handicap_us": 0.0,
            },
        )
        deadline = time.monotonic() + 300
        ready = wire.recv(ours, deadline)
        batch = {"op": "batch", "prompts": [[7] * 30, [9] * 50, [11] * 20, [3] * 45], "max_new": [16] * 4}

        def serve():
            wire.send(ours, batch)
            return [wire.recv(ours, deadline) for _ in range(4)]

        plain = serve()
        wire.send(ours, {"op": "twin", "slots": ["activation.silu_and_mul"]})
        twin = wire.recv(ours, deadline)
        nudged = serve()
        wire.send(ours, {"op": "audit"})
        first = wire.recv(ours, deadline)
        parts = [first] + [wire.recv(ours, deadline) for _ in range(first.get("parts", 1) - 1)]
        rec = audit_record(3, "T", parts)
        wire.send(ours, {"op": "stop"})
        counts = wire.recv(ours, deadline)
        differs = [m.get("logprobs") for m in plain] != [m.get("logprobs") for m in nudged]
        ok = (
            ready["type"] == "ready"
            and twin.get("slots") == ["activation.silu_and_mul"]
            and differs
            and rec.error is None
            and rec.calls
            and not any(s.calls_failed for s in rec.slots.values())
        )
        report(
            "engine",
            ok,
            twin=twin,
            nudged_differs=differs,
            error=rec.error,
            slots={k: [v.calls_audited, v.calls_failed, v.worst.ratio] for k, v in rec.slots.items()},
            executions=max((c.execution for c in rec.calls), default=0),
            routed=counts.get("routed"),
        )
    finally:
        ours.close()
        proc.wait(timeout=60)
