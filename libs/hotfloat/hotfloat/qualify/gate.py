"""The correctness gate: the candidate engine's greedy completions must match the baseline's.

Every pass and request of every candidate run is compared with the first baseline run. With a tolerance of 0 the
tokens and their logprobs must be identical; with a tolerance, logprobs may differ by at most that much, and a token
may differ only where the baseline's top-two logprobs were within the tolerance (a near tie that a rounding
difference can legitimately flip), after which the two completions are no longer comparable. Later baseline runs
are held to the same standard: a baseline that disagrees with itself cannot judge anybody. A non-finite logprob or
margin (NaN, infinity) is a disagreement wherever it appears: every comparison with NaN is False, so without this
check a NaN would pass any tolerance.
"""

from __future__ import annotations

import math

from .records import RunFrame


def compare(ref: RunFrame, other: RunFrame, tol: float) -> str | None:
    """The first disagreement of `other` with `ref` as a sentence, or None when they agree."""
    for p, (rt, ot, rl, ol, rm, om) in enumerate(zip(ref.tokens, other.tokens, ref.logprobs, other.logprobs, ref.margins,
                                                    other.margins)):
        for r, (a, b, la, lb, ma, mb) in enumerate(zip(rt, ot, rl, ol, rm, om)):
            if len(a) != len(b):
                return f"pass {p} request {r}: {len(b)} tokens where the baseline has {len(a)}"
            for j, (x, y, lx, ly, mx, my) in enumerate(zip(a, b, la, lb, ma, mb)):
                if not all(math.isfinite(v) for v in (lx, ly, mx, my)):
                    return f"pass {p} request {r} token {j}: non-finite logprob ({ly!r}; baseline {lx!r}, top-2 gap {mx!r})"
                if x != y:
                    if tol > 0 and mx <= tol:
                        break
                    return f"pass {p} request {r} token {j}: {y} where the baseline chose {x} (top-2 gap {mx:.3g})"
                if abs(lx - ly) > tol:
                    return f"pass {p} request {r} token {j}: logprob differs by {abs(lx - ly):.3g} > tolerance {tol:g}"
    return None


def gate(frames: list[RunFrame], tol: float) -> tuple[str, str]:
    """(status, reason) over ok frames in protocol order: FAIL names the candidate's first wrong token,
    NO_DECISION a baseline that disagrees with itself."""
    baselines = [f for f in frames if f.role == "B"]
    ref = baselines[0]
    for f in baselines[1:]:
        if (why := compare(ref, f, tol)) is not None:
            return "NO_DECISION", f"baseline run {f.index} disagrees with run {ref.index} (engine not deterministic): {why}"
    for f in frames:
        if f.role == "C" and (why := compare(ref, f, tol)) is not None:
            return "FAIL", f"candidate run {f.index} does not match the baseline: {why}"
    return "PASS", "every candidate completion matches the baseline"
