"""Where an engine process's boot goes, for the device: with HOTFLOAT_STACK_SAMPLES="INTERVAL:SECONDS" set, a daemon
thread writes the main thread's innermost Python frames to stderr (the engine's log) every INTERVAL seconds for
SECONDS seconds, one line each, which tools/device/helpers/stacks.py counts. On the H100 an engine boot took twice the H200's
with every JIT cache seeded (docs/device-runs.md, session 27), so the time is not compilation and a sampler has to say
where it is. Off unless set; it reads frames and computes nothing the engine serves. A main thread holding the GIL in
a long native call leaves a gap in the samples' times, which says as much."""

from __future__ import annotations

import os
import sys
import threading
import time

ENV = "HOTFLOAT_STACK_SAMPLES"
DEPTH = 8
"""Frames per sample, innermost first."""


def parse(value: str | None) -> tuple[float, float] | None:
    """INTERVAL:SECONDS as two positive floats (INTERVAL at least 0.05 s, SECONDS at most an hour); None otherwise."""
    try:
        interval, seconds = (float(x) for x in (value or "").split(":"))
    except ValueError:
        return None
    return (interval, seconds) if 0.05 <= interval and 0 < seconds <= 3600 else None


def start(value: str | None = None) -> threading.Thread | None:
    """Starts the sampler this process's environment asks for; None when it asks for none."""
    got = parse(os.environ.get(ENV) if value is None else value)
    if got is None:
        return None
    thread = threading.Thread(target=_sample, args=got, name="hotfloat-stacks", daemon=True)
    thread.start()
    return thread


def line(frame, t: float, depth: int = DEPTH) -> str:
    """One sample: pid, seconds since the sampler started, then file:function:line from the innermost frame out."""
    parts = []
    while frame is not None and len(parts) < depth:
        code = frame.f_code
        parts.append(f"{code.co_filename.rsplit('/', 2)[-1]}:{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return f"hotfloat stack {os.getpid()} {t:.2f}: {' < '.join(parts)}"


def _sample(interval: float, seconds: float) -> None:
    main, t0 = threading.main_thread().ident, time.monotonic()
    while (t := time.monotonic() - t0) < seconds:
        frame = sys._current_frames().get(main)
        if frame is not None:
            print(line(frame, t), file=sys.stderr, flush=True)
        del frame
        time.sleep(interval)
