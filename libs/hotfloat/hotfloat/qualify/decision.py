"""From raw frames to a decision: infrastructure first, then the correctness gate, then the speed rule.

`judge` is the one function both the live runner (after every run, to know when to stop) and a later recompute
(once, over the evidence) call, so the two can never disagree.
"""

from __future__ import annotations

import numpy as np

from .gate import gate
from .records import Decision, RuleConfig, RunFrame
from .rule import decide


def judge(frames: list[RunFrame], rule: RuleConfig) -> Decision | None:
    """The decision the frames so far support, or None while the protocol needs more runs."""
    for f in frames:
        if not f.ok and (f.role == "B" or not f.raised):
            return Decision(status="NO_DECISION", reason=f"infrastructure: {f.role} run {f.index} failed: {f.error}")
        if not f.ok:
            return Decision(status="FAIL", gate="FAIL", reason=f"candidate engine run {f.index} raised: {f.error}")
    if not any(f.role == "C" for f in frames):
        return None
    status, why = gate(frames, rule.logprob_tol)
    if status != "PASS":
        return Decision(status=status, gate=status if status == "FAIL" else "N/A", reason=why)
    if not any(sum(f.routed.values()) for f in frames if f.role == "C"):
        return Decision(status="N/A", gate="PASS", reason="no engine call reached the bundle (outside its declared domain)")
    if frames[-1].role != "B":
        return None
    look = decide([(f.role, np.median(np.asarray(f.latency_s), axis=0)) for f in frames], rule)
    if look.status is None:
        return None
    return Decision(status=look.status, reason=look.reason, gate="PASS", score=look.score if look.status == "PASS" else 0.0,
                    improvement=look.improvement, lower=look.lower, upper=look.upper, drift=look.drift, pairs=look.pairs)
