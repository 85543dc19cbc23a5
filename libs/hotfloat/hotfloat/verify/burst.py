"""Bursts: one request carrying several kernel calls that the child runs back to back.

In the engine an op is called again microseconds after it returns, with no host synchronisation in between, so a
verifier that always pauses between calls publishes a signal a kernel can time. A burst carries the tensors of up
to four calls of distinct cases (no buffer is shared), the child runs them with drawn gaps (mostly none) and
snapshots each call's outputs on the device right after it returns, then fingerprints everything once after a
drawn settle delay (sometimes none). Every draw comes from the run's secret.
"""

from __future__ import annotations

import random
from dataclasses import replace

from . import wire
from .inputs import Prepared
from .plan import Call

SIZES = (1, 1, 2, 3, 4)
"""Calls per burst, drawn uniformly from this list."""


def group(calls: list[Call], rng: random.Random, tensors_per_call: int) -> list[list[Call]]:
    """Cuts the shuffled calls into bursts of drawn sizes; a burst never holds two calls of one case."""
    limit = max(1, wire.MAX_TENSORS // max(1, tensors_per_call))
    bursts, i = [], 0
    while i < len(calls):
        size = min(rng.choice(SIZES), limit)
        burst = [calls[i]]
        i += 1
        while len(burst) < size and i < len(calls) and all(c.case.index != calls[i].case.index for c in burst):
            burst.append(calls[i])
            i += 1
        bursts.append(burst)
    return bursts


def gap(rng: random.Random, settle_s: float) -> float:
    """Seconds between two calls of a burst: none half the time, else up to the settle delay."""
    return 0.0 if rng.random() < 0.5 else rng.uniform(0.0, settle_s)


def settle(rng: random.Random, settle_s: float) -> float:
    """Seconds between a burst's last return and its fingerprints: none a quarter of the time, else around `settle_s`."""
    return 0.0 if rng.random() < 0.25 else rng.uniform(0.5, 1.5) * settle_s


def request(preps: list[Prepared], gaps: list[float], settle_s: float) -> tuple[dict, list]:
    """The `call` request: each call's meta with the prefix that makes its tensor names unique in the frame."""
    calls, tensors = [], []
    for j, prep in enumerate(preps):
        prefix = f"k{j}_"
        calls.append({**prep.meta, "prefix": prefix})
        tensors += [(replace(h, name=prefix + h.name), data) for h, data in prep.sent]
    return {"calls": calls, "gaps": gaps, "settle_s": settle_s}, tensors


def split(frame: wire.Frame, count: int) -> list[wire.Frame]:
    """The reply as one frame per call under the call's own tensor names, as `check.judge` reads them; a reply that
    is not a well-formed burst result is handed to every call, which judges it a protocol violation."""
    calls = frame.meta.get("calls") if frame.kind == "result" else None
    if set(frame.meta) != {"calls"} or not isinstance(calls, list) or len(calls) != count:
        return [frame] * count
    frames = []
    for j, meta in enumerate(calls):
        prefix = f"k{j}_"
        if isinstance(meta, dict) and set(meta) == {"raised"}:
            frames.append(wire.Frame("raised", {"error": meta["raised"]}))
            continue
        tensors = tuple(
            (replace(h, name=h.name[len(prefix) :]), data) for h, data in frame.tensors if h.name.startswith(prefix)
        )
        frames.append(wire.Frame("result", meta if isinstance(meta, dict) else {"malformed": True}, tensors))
    return frames
