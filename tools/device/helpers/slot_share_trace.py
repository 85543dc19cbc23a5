"""Attribution of a torch.profiler trace to engine steps and slots, for tools/device/helpers/slot_share.py (stdlib only).

The measurement marks each step with a `hotfloat.step:<kind>` range and each seam call with a `hotfloat:<slot>` range
on the host. A GPU event (kernel, copy, fill) carries the correlation id of the runtime or driver call that launched
it; that launch's host thread and time place the GPU event in the innermost step and slot range around it. GPU time
is summed per step kind and slot: the launch's place, not the GPU event's own time, decides, so a kernel that runs
after its range ended (the GPU lags the host) still counts for the slot that launched it.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

STEP = "hotfloat.step:"
SLOT = "hotfloat:"
GPU = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH = ("cuda_runtime", "cuda_driver")


class _Ranges:
    """Non-overlapping host ranges of one kind on each thread, found by time."""

    def __init__(self, events: list[dict], prefix: str):
        self.by_thread: dict[tuple, list[tuple[float, float, str]]] = defaultdict(list)
        for e in events:
            if e.get("cat") == "user_annotation" and e.get("name", "").startswith(prefix):
                self.by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"][len(prefix) :]))
        for ranges in self.by_thread.values():
            ranges.sort()
        self.starts = {k: [r[0] for r in v] for k, v in self.by_thread.items()}

    def at(self, thread: tuple, ts: float) -> str | None:
        """The name of the range on `thread` that holds time `ts`, else None."""
        i = bisect.bisect_right(self.starts.get(thread, []), ts) - 1
        if i < 0:
            return None
        start, end, name = self.by_thread[thread][i]
        return name if start <= ts < end else None

    def count(self, within: "_Ranges") -> dict[tuple[str, str], int]:
        """How many of these ranges start inside each of `within`'s, by (its name, this name)."""
        out: dict[tuple[str, str], int] = defaultdict(int)
        for thread, ranges in self.by_thread.items():
            for start, _, name in ranges:
                outer = within.at(thread, start)
                if outer is not None:
                    out[(outer, name)] += 1
        return out


def attribute(events: list[dict]) -> dict[str, dict]:
    """Per step kind: {"steps", "step_us", "slots": {slot: us per step}, "calls": {slot: calls per step},
    "unattributed_us"} from a chrome trace's events (a GPU event whose launch is in no step is unattributed, spread
    over every kind's steps)."""
    steps, slots = _Ranges(events, STEP), _Ranges(events, SLOT)
    launches = {
        e["args"]["correlation"]: ((e["pid"], e["tid"]), e["ts"])
        for e in events
        if e.get("cat") in LAUNCH and "correlation" in e.get("args", {})
    }
    n_steps: dict[str, int] = defaultdict(int)
    for ranges in steps.by_thread.values():
        for _, _, kind in ranges:
            n_steps[kind] += 1
    total: dict[str, float] = defaultdict(float)
    per_slot: dict[tuple[str, str], float] = defaultdict(float)
    lost = 0.0
    for e in events:
        if e.get("cat") not in GPU:
            continue
        launch = launches.get(e.get("args", {}).get("correlation"))
        kind = steps.at(*launch) if launch else None
        if kind is None:
            lost += e["dur"]
            continue
        total[kind] += e["dur"]
        slot = slots.at(*launch)
        if slot is not None:
            per_slot[(kind, slot)] += e["dur"]
    calls = slots.count(steps)
    every = sum(n_steps.values()) or 1
    return {
        kind: {
            "steps": n,
            "step_us": total[kind] / n,
            "slots": {s: us / n for (k, s), us in per_slot.items() if k == kind},
            "calls": {s: c / n for (k, s), c in calls.items() if k == kind},
            "unattributed_us": lost / every,
        }
        for kind, n in n_steps.items()
    }
