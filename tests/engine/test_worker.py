"""The worker's ops besides batches, on the transformers engine (an unsandboxed worker process over a socketpair):
`counts` without stopping, `twin` enabling the gate twin's slots, `audit` sending what the round's audit kept,
which the validator's checker opens and recomputes, a round at a time."""

import os
import socket
import subprocess
import sys
import time

from hotfloat.audit.config import AuditConfig
from hotfloat.audit.kinds import ROWWISE
from hotfloat.bundle import load_bundle
from hotfloat.engine import wire
from hotfloat.qualify.audit import audit_round

SLOTS = ["activation.silu_and_mul", "norm.fused_add_rmsnorm", "norm.rmsnorm"]
AUDIT = AuditConfig(key=(1 << 62) + 5, keep=2, rows=4, slots=ROWWISE)


def test_twin_counts_and_audit_ops(bundles, tmp_path):
    ours, theirs = socket.socketpair()
    env = {**os.environ, "TRITON_INTERPRET": "1", "HOTFLOAT_WORKER_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "hotfloat.engine.worker"], stdin=theirs.fileno(), env=env)
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
                "audit": AUDIT.to_wire(),
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
        wire.send(ours, {"op": "audit", "round": 3})
        first = wire.recv(ours, deadline)
        parts = [first] + [wire.recv(ours, deadline) for _ in range(first["parts"] - 1)]
        rec = audit_round(3, "T", 3, parts, AUDIT)
        assert (
            rec.error is None and set(rec.slots) == {"activation.silu_and_mul", "norm.rmsnorm"} and len(rec.calls) > 4
        )
        assert all(s.calls_failed == 0 for s in rec.slots.values()) and {c.round for c in rec.calls} == {3}
        assert all(s.kept == min(2, s.calls) for s in rec.strata) and sum(s.calls for s in rec.strata) > 20
        wire.send(ours, {"op": "audit", "round": 4})  # nothing ran since: the next round keeps nothing
        again = audit_round(3, "T", 4, [wire.recv(ours, deadline)], AUDIT)
        assert again.error is None and again.calls == [] and all(s.calls == 0 for s in again.strata)
        wire.send(ours, {"op": "stop"})
        final = wire.recv(ours, deadline)
        assert (
            final["type"] == "counts"
            and final["routed"]["activation.silu_and_mul"] > counts["routed"]["activation.silu_and_mul"]
        )
    finally:
        ours.close()
        proc.wait(timeout=60)


def test_the_boot_line_says_which_cache_files_were_copied_and_which_compiled(tmp_path, monkeypatch, capsys):
    """A boot that compiles beside full warm caches points at a cache they miss: the engine log must say so."""
    from hotfloat.engine import worker

    monkeypatch.setenv("HOTFLOAT_WORKER_HOME", str(tmp_path))
    (tmp_path / "cache" / "triton" / "k1").mkdir(parents=True)
    (tmp_path / "cache" / "triton" / "k1" / "a.cubin").write_bytes(b"x")
    copied = worker._cache_files()
    (tmp_path / "cache" / "triton" / "k2").mkdir()
    (tmp_path / "cache" / "triton" / "k2" / "b.cubin").write_bytes(b"y")
    (tmp_path / "cache" / "tvm-ffi").mkdir()
    (tmp_path / "cache" / "tvm-ffi" / "op.so").write_bytes(b"z")
    worker._say_boot(copied, [0.25, 12.0, 3.5])
    line = capsys.readouterr().err.strip()
    assert line == (
        "hotfloat worker: boot caches 0.2 s, engine 12.0 s, warm-up 3.5 s; "
        "cache files copied+compiled: triton 1+1, tvm-ffi 0+1"
    )
