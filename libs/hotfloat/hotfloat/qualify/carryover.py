"""Carry-over: whether the candidate's engine slows the engine timed right after it.

Idle engines are stopped while another is timed (resident.alone), but GPU work an engine queued before it was
stopped still runs. A candidate that leaves long kernels behind slows the next pass, which is always a baseline's,
and looks faster by comparison. The secret round order puts each baseline pass after C about half the time and after
the other baseline otherwise; the difference between the two groups is the carry-over, and the rule charges it to C
when it is both above the rule's bound and clear of the noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean, median, variance

from .records import RunFrame

MIN_PER_GROUP = 3
"""Baseline passes needed after C and after the other baseline before the carry-over is estimated."""
CLEAR_SE = 3.0
"""The carry-over must exceed this many standard errors as well as the bound: noise alone never charges C."""


@dataclass(frozen=True)
class CarryOver:
    penalty: float
    """Mean log slowdown of a baseline pass timed right after C, against one timed right after the other baseline."""
    se: float
    after_c: int
    after_baseline: int

    def charged(self, bound: float) -> bool:
        return self.penalty > bound and self.penalty > CLEAR_SE * self.se


def carry_over(frames: list[RunFrame], order: list[list[int]]) -> CarryOver | None:
    """The carry-over over the rounds all three engines served (frames 0 B, 1 C, 2 B'; `order[r]` the engine indices
    in round r's serving order); None while either group has fewer than MIN_PER_GROUP passes."""
    n = min(len(f.pass_s) for f in frames)
    if n == 0 or len(order) < n:
        return None
    centre = {e: median(math.log(t) for t in frames[e].pass_s[:n]) for e in (0, 2)}
    after: dict[bool, list[float]] = {True: [], False: []}
    previous = None
    for r in range(n):
        for e in order[r]:
            if e != 1 and previous is not None:
                after[previous == 1].append(math.log(frames[e].pass_s[r]) - centre[e])
            previous = e
    c, b = after[True], after[False]
    if len(c) < MIN_PER_GROUP or len(b) < MIN_PER_GROUP:
        return None
    se = math.sqrt(variance(c) / len(c) + variance(b) / len(b))
    return CarryOver(penalty=fmean(c) - fmean(b), se=se, after_c=len(c), after_baseline=len(b))
