"""The worker's ops besides batches, on the transformers engine (an unsandboxed worker process over a socketpair):
`counts` without stopping, `twin` enabling the gate twin's slots, `audit` sending what the audit kept, which the
validator's checker recomputes."""

import os
import socket
import subprocess
import sys
import time

from hotfloat.bundle import load_bundle
from hotfloat.qualify import wire
from hotfloat.qualify.audit import audit_record

SLOTS = ["activation.silu_and_mul", "norm.fused_add_rmsnorm", "norm.rmsnorm"]


def test_twin_counts_and_audit_ops(bundles, tmp_path):
    ours, theirs = socket.socketpair()
    env = {**os.environ, "TRITON_INTERPRET": "1", "HOTFLOAT_WORKER_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "hotfloat.qualify.engines.worker"], stdin=theirs.fileno(), env=env)
    theirs.close()
    cand = bundles["exact"]
    try:
        wire.send(
            ours,
            {
                "kind": "transformers",
                "preset": "tiny",
                "dtype": "fp32",
                "device": "cpu",
                "weight_seed": 0,
                "decode": "eager",
                "bundle": None,
                "identity": None,
                "twin_of": str(cand),
                "twin_identity": load_bundle(cand).identity,
                "warmup": [],
                "audit_key": 5,
                "audit_rate": 0.25,
                "audit_rows": 4,
            },
        )
        deadline = time.monotonic() + 300
        assert wire.recv(ours, deadline)["type"] == "ready"
        batch = {"op": "batch", "prompts": [[5, 6, 7], [8] * 9], "max_new": [4, 4]}

        def serve():
            wire.send(ours, batch)
            return [wire.recv(ours, deadline) for _ in range(2)]

        plain = serve()
        wire.send(ours, {"op": "counts"})
        counts = wire.recv(ours, deadline)
        assert counts["type"] == "counts" and counts["routed"]["activation.silu_and_mul"] > 0  # the twin's sites
        wire.send(ours, {"op": "twin", "slots": SLOTS})
        assert wire.recv(ours, deadline) == {"type": "twin", "slots": ["activation.silu_and_mul"]}
        nudged = serve()
        assert [m["tokens"] for m in nudged] and [m["logprobs"] for m in nudged] != [m["logprobs"] for m in plain]
        wire.send(ours, {"op": "audit"})
        first = wire.recv(ours, deadline)
        parts = [first] + [wire.recv(ours, deadline) for _ in range(first["parts"] - 1)]
        rec = audit_record(3, "T", parts)
        assert rec.error is None and set(rec.slots) <= set(SLOTS) and len(rec.calls) > 4
        assert all(s.calls_failed == 0 for s in rec.slots.values())
        wire.send(ours, {"op": "stop"})
        final = wire.recv(ours, deadline)
        assert (
            final["type"] == "counts"
            and final["routed"]["activation.silu_and_mul"] > counts["routed"]["activation.silu_and_mul"]
        )
    finally:
        ours.close()
        proc.wait(timeout=60)


def test_the_boot_line_says_which_cache_files_were_seeded_and_which_compiled(tmp_path, monkeypatch, capsys):
    """A boot that compiles beside a full seed points at a cache the seed misses: the engine log must say so."""
    from hotfloat.qualify.engines import worker

    monkeypatch.setenv("HOTFLOAT_WORKER_HOME", str(tmp_path))
    (tmp_path / "cache" / "triton" / "k1").mkdir(parents=True)
    (tmp_path / "cache" / "triton" / "k1" / "a.cubin").write_bytes(b"x")
    seeded = worker._cache_files()
    (tmp_path / "cache" / "triton" / "k2").mkdir()
    (tmp_path / "cache" / "triton" / "k2" / "b.cubin").write_bytes(b"y")
    (tmp_path / "cache" / "tvm-ffi").mkdir()
    (tmp_path / "cache" / "tvm-ffi" / "op.so").write_bytes(b"z")
    worker._say_boot(seeded, [0.25, 12.0, 3.5])
    line = capsys.readouterr().err.strip()
    assert line == (
        "hotfloat worker: boot seed 0.2 s, engine 12.0 s, warm-up 3.5 s; "
        "cache files seeded+compiled: triton 1+1, tvm-ffi 0+1"
    )
