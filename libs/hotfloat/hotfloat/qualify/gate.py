"""The correctness gate: the candidate engine's greedy completions against the baseline's, measured against a twin.

Every completion is compared with the first baseline run's along the baseline's own path: while both chose the same
tokens they saw the same context, so their logprob differences there are a teacher-forced comparison of the two
engines' numerics; at the first token they choose differently the completion has left the path and the rest is not
comparable. A token may differ freely only where the baseline's top-two logprobs were within the floor tolerance (a
near tie); any other departure counts against the engine.

How much difference is legitimate is measured, not assumed: on a random-weight model one kernel's rounding grows
through every layer, so an accurate kernel that is not bit-exact leaves the path within a few tokens
(docs/qualification.md). The twin is the baseline engine whose outputs of the slots the candidate routed, inside its
declared domains, are stochastically rounded to a neighbouring value (a quarter of the elements one ulp up or down:
an accurate kernel's size, hotfloat.seams); it serves the first look's prompts after they were timed. The allowance is
end to end, so an op routed in another slot widens it; the in-engine audit checks each slot on its own
(hotfloat.qualify.audit). The candidate passes when its logprob differences at the median, 90th and 99th
percentiles, and its rate of leaving the path, are each at most `slack` times the twin's (never below the floor);
the rule carries the slack (RuleConfig.gate_slack), chosen from the H200 ladder (docs/qualification.md).
Without a twin (older evidence, the calibration's collections) the floor alone applies: identical tokens, logprobs
within the floor.

Later baseline runs are held to the floor: a baseline that disagrees with itself cannot judge anybody. A non-finite
logprob or margin (NaN, infinity) is a disagreement wherever it appears: every comparison with NaN is False, so
without this check a NaN would pass any tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .audit_records import AuditRecord
from .records import RunFrame

LEVELS = (0.5, 0.9, 0.99)
"""Percentiles of the per-token logprob differences compared with the twin's."""


@dataclass(frozen=True)
class Divergence:
    """How one engine's completions stray from the reference's along the reference's path."""

    diffs: np.ndarray
    """|logprob difference| at every token both chose, up to each completion's first departure."""
    departures: int
    """Completions that left the path where the reference had no near tie."""
    compared: int
    """Tokens compared: the chosen ones and the departing ones."""
    first: str | None
    """The first token beyond the floor (a departure without a near tie, or a logprob off by more), as a sentence."""

    @property
    def rate(self) -> float:
        """Departures per compared token: how fast the engine leaves the path."""
        return self.departures / self.compared if self.compared else 0.0

    def level(self, q: float) -> float:
        return float(np.quantile(self.diffs, q)) if self.diffs.size else 0.0


def divergence(ref: RunFrame, other: RunFrame, tol: float) -> Divergence | str:
    """`other` against `ref` over the passes both have; a sentence instead when a completion is malformed."""
    diffs: list[float] = []
    departures = compared = 0
    first = None
    for p, (rt, ot, rl, ol, rm, om) in enumerate(
        zip(ref.tokens, other.tokens, ref.logprobs, other.logprobs, ref.margins, other.margins, strict=False)
    ):
        for r, (a, b, la, lb, ma, mb) in enumerate(zip(rt, ot, rl, ol, rm, om, strict=False)):
            if len(a) != len(b):
                return f"pass {p} request {r}: {len(b)} tokens where the baseline has {len(a)}"
            for j, (x, y, lx, ly, mx, my) in enumerate(zip(a, b, la, lb, ma, mb, strict=False)):
                if not all(math.isfinite(v) for v in (lx, ly, mx, my)):
                    return f"pass {p} request {r} token {j}: non-finite logprob ({ly!r}; baseline {lx!r}, top-2 gap {mx!r})"
                compared += 1
                if x != y:
                    if mx > tol:
                        departures += 1
                        if first is None:
                            first = (
                                f"pass {p} request {r} token {j}: {y} where the baseline chose {x} (top-2 gap {mx:.3g})"
                            )
                    break
                diffs.append(abs(lx - ly))
                if diffs[-1] > tol and first is None:
                    first = f"pass {p} request {r} token {j}: logprob differs by {diffs[-1]:.3g} > tolerance {tol:g}"
    return Divergence(np.asarray(diffs), departures, compared, first)


def compare(ref: RunFrame, other: RunFrame, tol: float) -> str | None:
    """The first disagreement of `other` with `ref` beyond the floor, as a sentence, or None when they agree."""
    d = divergence(ref, other, tol)
    return d if isinstance(d, str) else d.first


def gate(frames: list[RunFrame], tol: float, twin: RunFrame | None = None, slack: float = 2.0) -> tuple[str, str]:
    """(status, reason) over ok frames in protocol order: FAIL says how the candidate strays beyond `slack` times the
    twin's divergence, NO_DECISION names a baseline that disagrees with itself or a twin that could not be read."""
    baselines = [f for f in frames if f.role == "B"]
    ref = baselines[0]
    for f in baselines[1:]:
        if (why := compare(ref, f, tol)) is not None:
            return (
                "NO_DECISION",
                f"baseline run {f.index} disagrees with run {ref.index} (engine not deterministic): {why}",
            )
    limits = None
    if twin is not None:
        t = divergence(ref, twin, tol)
        if isinstance(t, str):
            return "NO_DECISION", f"infrastructure: the twin's completions are unreadable: {t}"
        limits = t
    for f in frames:
        if f.role != "C":
            continue
        why = compare(ref, f, tol) if limits is None else _beyond(divergence(ref, f, tol), limits, tol, slack)
        if why is not None:
            return "FAIL", f"candidate run {f.index} does not match the baseline: {why}"
    if limits is None:
        return "PASS", "every candidate completion matches the baseline"
    return "PASS", f"the candidate stays within {slack:g}x the twin's divergence ({_levels(limits)} for the twin)"


def _beyond(c: Divergence | str, t: Divergence, tol: float, slack: float) -> str | None:
    """Why the candidate's divergence exceeds `slack` times the twin's, or None when it does not."""
    if isinstance(c, str):
        return c
    for q in LEVELS:
        limit = max(tol, slack * t.level(q))
        if c.level(q) > limit:
            return (
                f"logprob differences at the {q:.0%} level are {c.level(q):.3g} > {limit:.3g} ({slack:g}x the "
                f"twin's {t.level(q):.3g})"
            )
    if c.rate > slack * t.rate:
        return (
            f"leaves the baseline's path at {c.rate:.2%} of tokens > {slack * t.rate:.2%} ({slack:g}x the "
            f"twin's {t.rate:.2%})"
        )
    return None


def _levels(d: Divergence) -> str:
    qs = "/".join(f"{d.level(q):.3g}" for q in LEVELS)
    return f"logprob differences {qs} at the {'/'.join(f'{q:.0%}' for q in LEVELS)} levels, path left at {d.rate:.2%} of tokens"


def furthest(audits: list[AuditRecord] | None) -> str | None:
    """For a gate FAIL's reason: the slot whose calls the candidate engine's audit found furthest from the fp32
    reference, relative to the slot's tolerance (where a kernel author looks first); None without an audit."""
    cand = next((a for a in audits or () if a.role == "C" and a.slots), None)
    if cand is None:
        return None
    s = max(cand.slots.values(), key=lambda s: s.worst.ratio)
    return (
        f"the candidate's audited calls furthest from the reference are {s.worst.slot}'s (worst "
        f"{s.worst.ratio:.3g}x its tolerance, max abs err {s.worst.max_abs_err:.3g}, over {s.calls_audited} calls)"
    )
