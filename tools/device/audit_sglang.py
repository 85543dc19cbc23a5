"""Issue 32 through SGLang on the GPU: one worker engine (unsandboxed, the twin of examples/silu_triton, audited)
answers `counts`, `twin` and `audit` through the plugin's control file in SGLang's scheduler process.

    bash tools/device/engine_install.sh && . tools/device/sglang_env.sh && python3 tools/device/audit_sglang.py

Prints one JSON line and exits 1 unless: the twin's silu sites are counted, enabling them changes the completions,
and the audit comes back with eager (prefill) and captured (decode graph) calls, none wrong beyond tolerance.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hotfloat.bundle import load_bundle
from hotfloat.qualify import wire
from hotfloat.qualify.audit import audit_record
from hotfloat.qualify.checkpoint import ensure

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    cand = REPO / "examples/silu_triton"
    model = ensure("qwen2-0.5b", "bf16", 0)
    home = Path(tempfile.mkdtemp(prefix="audit-sglang-"))
    ours, theirs = socket.socketpair()
    log = open(home / "engine.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hotfloat.qualify.engines.worker"],
        stdin=theirs.fileno(),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "HOTFLOAT_WORKER_HOME": str(home)},
        start_new_session=True,
    )
    theirs.close()
    out: dict = {}
    t0 = time.monotonic()
    try:
        wire.send(
            ours,
            {
                "kind": "sglang",
                "preset": "qwen2-0.5b",
                "model_path": None,
                "dtype": "bf16",
                "device": "cuda",
                "weight_seed": 0,
                "decode": "graph",
                "bundle": None,
                "identity": None,
                "twin_of": str(cand),
                "twin_identity": load_bundle(cand).identity,
                "warmup": [[[[5] * 300] * 4, [16] * 4]],
                "graph_batches": [4],
                "kv_tokens": 16384,
                "mem_fraction": 0.95,
                "model_dir": str(model),
                "audit_key": 77,
                "audit_rate": 0.25,
                "audit_rows": 8,
            },
        )
        deadline = time.monotonic() + 400
        ready = wire.recv(ours, deadline)
        out["boot_s"] = round(time.monotonic() - t0, 1)
        if ready.get("type") != "ready":
            raise RuntimeError(f"not ready: {str(ready)[:500]}")
        batch = {"op": "batch", "prompts": [[7] * 200, [9] * 250, [11] * 180, [3] * 220], "max_new": [32] * 4}

        def serve():
            wire.send(ours, batch)
            return [wire.recv(ours, deadline) for _ in range(4)]

        def ask(msg):
            wire.send(ours, msg)
            reply = wire.recv(ours, deadline)
            if reply.get("type") == "error":
                raise RuntimeError(reply["message"])
            return reply

        plain = serve()
        counts = ask({"op": "counts"})
        t1 = time.monotonic()
        twin = ask({"op": "twin", "slots": ["activation.silu_and_mul"]})
        out["twin_ack_s"] = round(time.monotonic() - t1, 2)
        nudged = serve()
        t1 = time.monotonic()
        first = ask({"op": "audit"})
        parts = [first] + [wire.recv(ours, deadline) for _ in range(first.get("parts", 1) - 1)]
        out["audit_s"] = round(time.monotonic() - t1, 2)
        rec = audit_record(0, "T", parts)
        wire.send(ours, {"op": "stop"})
        final = wire.recv(ours, deadline)
        differs = [m["logprobs"] for m in plain] != [m["logprobs"] for m in nudged]
        captured = [c for c in rec.calls if c.execution > 1]
        out.update(
            counts_routed=counts["routed"],
            twin=twin,
            nudged_differs=differs,
            error=rec.error,
            parts=len(parts),
            calls=len(rec.calls),
            captured_calls=len(captured),
            slots={k: [v.calls_audited, v.calls_failed, round(v.worst.ratio, 4)] for k, v in rec.slots.items()},
            final_routed=final.get("routed"),
        )
        out["ok"] = bool(
            counts["routed"].get("activation.silu_and_mul")
            and twin.get("slots") == ["activation.silu_and_mul"]
            and differs
            and rec.error is None
            and captured
            and len(rec.calls) > len(captured)
            and not any(v.calls_failed for v in rec.slots.values())
        )
    except Exception as e:
        out.update(ok=False, error=f"{type(e).__name__}: {e}"[:1500])
    finally:
        ours.close()
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait()
        log.close()
    if not out.get("ok"):
        out["log_tail"] = (home / "engine.log").read_text(errors="replace")[-3000:]
    print(json.dumps(out))
    dest = Path(os.environ.get("OUT", "/tmp/out")) / "audit_sglang"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "audit_sglang.json").write_text(json.dumps(out, indent=1))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
