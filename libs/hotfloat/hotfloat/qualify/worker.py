"""The engine process: the only place candidate code runs during qualification.

It is forked fresh for every run by the fork server (hotfloat.qualify.zygote), which has only imported torch and
transformers; it arms its bundle, builds the engine, warms up (capturing the decode graphs of every batch shape
when the validator chose graph decode), then answers batches it is sent one at a time. It
never sees the workload seed or future prompts, so it cannot precompute answers, and it never measures time: the
validator timestamps each completion message as it arrives. Messages are length-prefixed JSON (hotfloat.qualify.wire).
"""

from __future__ import annotations

import os
import resource

import torch
import transformers  # noqa: F401  (preloaded by the fork server so each engine process starts in seconds)
from transformers import LlamaForCausalLM, Qwen2ForCausalLM  # noqa: F401  (resolves the lazy model modules once)

from . import wire
from .engine import build_engine, serve_batch


def main(conn) -> None:
    """Runs one engine lifetime; the first message's spec holds engine, armed bundle, warm-up and calibration knobs."""
    os.setsid()  # the validator kills the whole group afterwards, so nothing the candidate spawns outlives the run
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        spec = wire.recv(conn)
        if spec["device"] == "cpu":
            os.environ["TRITON_INTERPRET"] = "1"
            torch.set_num_threads(spec.get("threads", 1))
        from ..seams import arm

        router = arm(spec.get("bundle"), identity=spec.get("identity"))
        engine = build_engine(spec["preset"], spec["dtype"], spec["device"], spec["weight_seed"], router,
                              spec.get("extra_passes", 0), spec["decode"])
        for prompts, max_new in spec["warmup"]:
            serve_batch(engine, prompts, max_new, lambda *a: None)
        _sync(engine)
        router.reset_counts()
        _send(conn, {"type": "ready", "identity": engine.identity})
        while True:
            msg = wire.recv(conn)
            if msg["op"] == "stop":
                break
            serve_batch(engine, msg["prompts"], msg["max_new"], lambda i, t, lp, m: _send(
                conn, {"type": "done", "i": i, "tokens": t, "logprobs": lp, "margins": m}))
        counts = router.counts()
        _send(conn, {"type": "counts", "routed": {k: c.routed for k, c in counts.items()},
                     "stock": {k: c.stock for k, c in counts.items()}})
    except BaseException as e:  # candidate code may raise anything, SystemExit included: report it as data
        _send(conn, {"type": "error", "message": f"{type(e).__name__}: {e}"[:2000]})


def _sync(engine) -> None:
    if engine.device.type == "cuda":
        torch.cuda.synchronize(engine.device)


def _send(conn, msg: dict) -> None:
    wire.send(conn, msg)
