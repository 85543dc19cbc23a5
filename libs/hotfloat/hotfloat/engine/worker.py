"""The engine process: the only place candidate code runs during qualification.

One resident worker per role (B, C, B') lives for a whole qualification in its own sandbox (hotfloat.qualify.host).
It builds its engine (the transformers stand-in, or SGLang with the hotfloat_sglang plugin arming the bundle in
every engine process), warms up on prompts the timed passes never use, pins its whole process tree to the CPUs the
validator gave it, takes everything warm-up left alive out of the garbage collector's view (a full collection over
the model's objects inside a pass is a stall of a hundred milliseconds or more), reports ready, then answers batches
one at a time until told to stop; between batches it also enables the gate twin's slots (`twin`), reports its seam
counts (`counts`) and sends what its audit kept (`audit`). It never sees the workload seed or future prompts, so it
cannot precompute answers, and it never measures time: the validator timestamps each completion message as it
arrives. Messages are length-prefixed JSON (hotfloat.engine.wire) on fd 0.
"""

from __future__ import annotations

import base64
import os
import resource
import shutil
import socket
import sys
import time
import traceback

from . import hostload, wire

WARM_CACHE = "/warm-cache"
"""Where the validator's warm JIT caches are bound read-only (hotfloat.qualify.host), copied before candidate code runs."""
PART_BYTES = 5 << 19
"""Raw audit bytes per message: 2.5 MiB is 3.4 MiB of base64, under wire.MAX_MESSAGE with the headers; an entry is
at most 2.5 MiB (hotfloat.audit.layout.MAX_ENTRY_BYTES) and then travels in a part of its own."""
PART_ENTRIES = 512


def main(conn) -> None:
    """Runs one engine lifetime; the first message's spec holds the engine, armed bundle, warm-up and CPU set."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        spec = wire.recv(conn)
        t0 = time.monotonic()
        copied = _copy_warm_caches()
        t1 = time.monotonic()
        engine = _build(spec)
        t2 = time.monotonic()
        for prompts, max_new in spec["warmup"]:
            engine.serve(prompts, max_new, lambda *a: None)
        _say_boot(copied, [t1 - t0, t2 - t1, time.monotonic() - t2])
        if spec.get("cpus"):
            _pin(spec["cpus"])
        engine.reset_counts()
        engine.freeze_gc()
        wire.send(conn, {"type": "ready", "identity": engine.identity, "info": engine.info})
        while True:
            msg = wire.recv(conn)
            if msg["op"] == "stop":
                break
            if msg["op"] == "twin":
                wire.send(conn, {"type": "twin", "slots": engine.set_twin(msg["slots"])})
            elif msg["op"] == "counts":
                _counts(conn, engine)
            elif msg["op"] == "audit":
                for part in audit_parts(engine.audit(), int(msg["round"])):
                    wire.send(conn, part)
            else:
                engine.serve(
                    msg["prompts"],
                    msg["max_new"],
                    lambda i, t, lp, m: wire.send(
                        conn, {"type": "done", "i": i, "tokens": t, "logprobs": lp, "margins": m}
                    ),
                )
        _counts(conn, engine)
    except BaseException as e:  # candidate code may raise anything, SystemExit included: report it as data
        traceback.print_exc()  # the engine's log, for diagnostics
        where = "".join(
            f" <- {f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in traceback.extract_tb(e.__traceback__)[-3:]
        )
        try:
            wire.send(conn, {"type": "error", "message": f"{type(e).__name__}: {e}{where}"[:2000]})
        except OSError:
            pass
    finally:
        os._exit(0)  # SGLang's helper processes are ended with the sandbox; no interpreter shutdown to hang in


def _counts(conn, engine) -> None:
    routed, stock = engine.counts()
    wire.send(conn, {"type": "counts", "routed": routed, "stock": stock})


def audit_parts(dump: dict, rnd: int, limit: int = PART_BYTES, most: int = PART_ENTRIES) -> list[dict]:
    """A round's audit (hotfloat.seams.audit.Auditor.dump) as `audit` messages (at least one): the strata in the
    first, then each part's entries with their words' offsets into the part's base64 `data`, so every message stays
    under wire.MAX_MESSAGE."""
    groups: list[list] = [[]]
    for entry in dump["entries"]:
        if groups[-1] and (sum(len(d) for _, d in groups[-1]) + len(entry[1]) > limit or len(groups[-1]) >= most):
            groups.append([])
        groups[-1].append(entry)
    parts = []
    for i, group in enumerate(groups):
        heads, at = [], 0
        for head, data in group:
            heads.append({**head, "offset": at, "words": len(data) // 8})
            at += len(data)
        first = {"strata": dump["strata"], "unaudited": dump["unaudited"], "error": dump["error"]} if i == 0 else {}
        parts.append(
            {
                "type": "audit",
                "round": rnd,
                "part": i,
                "parts": len(groups),
                **first,
                "entries": heads,
                "data": base64.b64encode(b"".join(d for _, d in group)).decode(),
            }
        )
    return parts


def _pin(cpus: list[int]) -> None:
    """Pins every thread of this engine's process tree to its CPU set once it is warm (boot and JIT compilation use
    the whole machine; timed passes do not disturb each other); threads started later inherit the set."""
    for pid in hostload.tree(os.getpid()):
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass


def _copy_warm_caches() -> dict[str, int]:
    """Copies the validator's read-only warm JIT caches into this engine's private cache, before candidate code runs;
    returns the files per cache it copied."""
    home = os.environ.get("HOTFLOAT_WORKER_HOME", "/tmp")
    if os.path.isdir(WARM_CACHE):
        shutil.copytree(WARM_CACHE, os.path.join(home, "cache"), dirs_exist_ok=True, symlinks=True)
    return _cache_files()


def _cache_files() -> dict[str, int]:
    """Files under each of this engine's JIT caches (triton, tvm-ffi, ...)."""
    root = os.path.join(os.environ.get("HOTFLOAT_WORKER_HOME", "/tmp"), "cache")
    out: dict[str, int] = {}
    for top in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        out[top] = sum(len(files) for _, _, files in os.walk(os.path.join(root, top)))
    return out


def _say_boot(copied: dict[str, int], phases: list[float]) -> None:
    """One line in the engine's log: where the boot went, and what the JIT compiled that the warm caches did not hold
    (a boot that compiles beside full warm caches points at a cache they miss)."""
    now = _cache_files()
    caches = ", ".join(f"{k} {copied.get(k, 0)}+{now[k] - copied.get(k, 0)}" for k in now) or "none"
    copy, build, warm = phases
    print(
        f"hotfloat worker: boot caches {copy:.1f} s, engine {build:.1f} s, warm-up {warm:.1f} s; "
        f"cache files copied+compiled: {caches}",
        file=sys.stderr,
        flush=True,
    )


def _build(spec: dict):
    if spec["kind"] == "sglang":
        from .sglang_engine import SglangEngine

        return SglangEngine(spec)
    from .transformers_engine import TransformersEngine

    return TransformersEngine(spec)


if __name__ == "__main__":
    main(socket.socket(fileno=0))
