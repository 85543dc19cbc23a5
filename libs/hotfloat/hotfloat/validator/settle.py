"""Settlement, the one reproduction rule: a PASS counts only once independent qualifications reproduce it, and the
lowest score stands. A run that failed the correctness gate settles FAIL (a kernel that is right only some of the
time is wrong), and so does a run the candidate's own engine broke (it died, stalled, forged a frame or ran GPU work
while another engine was timed: behaving in one run and cheating in the other must not buy a re-roll); any other run
that did not pass (slower this time, undecided) settles NO_DECISION: not reproduced, never a loss.

What a PASS is worth is the validator's policy (`SettlementPolicy`, docs/qualification.md "What a PASS is worth"):
each run's verdict names the calibration record it was judged under and that record's upper bound on the false-PASS
rate; runs in fresh processes on fresh workload seeds fail independently, so the bound of all of them passing is the
product. A PASS is reproduced at least once, and again while the runs the policy allows can still bring that product
under its target; a PASS that cannot get there is settled provisional, and the policy says what that earns."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..qualify.calibrate.files import TARGET_FALSE_PASS
from ..record import Record
from ..verdict import Status

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


class SettlementPolicy(Record):
    """What a qualification PASS is worth to this validator (`[settlement]` in its config)."""

    target: Annotated[float, Field(gt=0, lt=1)] = TARGET_FALSE_PASS
    """The false-PASS bound a settled PASS must reach to be full: the product of the bounds of the records its runs
    were judged under (1 for a run under none)."""
    max_runs: Annotated[int, Field(ge=2, le=len(ORDINALS))] = 3
    """Most qualifications one submission gets: the first, and reproductions while they can still reach the target."""
    provisional: Literal["held", "crowned"] = "held"
    """A settled PASS that cannot reach the target is scored and shown either way; `held` keeps it out of every crown
    (it earns nothing until a record that backs it exists), `crowned` lets it compete, named provisional in its crown."""


DEFAULT_SETTLEMENT = SettlementPolicy()


class Attempt(Record):
    """One qualification's outcome for a bundle (hotfloat.qualify.QualifyResult reduced to what scoring reads)."""

    identity: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    status: Status
    score: Annotated[float, Field(ge=0, le=1)]
    """Median relative end-to-end improvement over the baseline; 0 unless PASS."""
    gate: Status | None = None
    """The correctness gate's verdict within this run; None when the run never reached it."""
    reason: str = ""
    """Why the run ended as it did, as the qualification said."""
    fault: str | None = None
    """The engine fault that ended the run (`C:...` is the candidate's own), as the qualification's decision says."""
    bound: Annotated[float, Field(ge=0, le=1)] = 1.0
    """The false-PASS upper bound of the calibration record the run was judged under; 1 under none."""
    calibration: str = "none"
    """That record's name, or `none`."""

    @property
    def lost(self) -> bool:
        """Failed by the candidate's own doing: its gate, or its engine's fault."""
        return self.status is Status.FAIL and (self.gate is Status.FAIL or (self.fault or "").startswith("C:"))


class Settled(Record):
    """A bundle's standing after its qualifications."""

    identity: str
    status: Status
    """PASS only when every run passed; FAIL if any failed its correctness gate; N/A if none ran; else NO_DECISION."""
    score: Annotated[float, Field(ge=0, le=1)]
    reason: str
    bound: Annotated[float, Field(ge=0, le=1)] = 1.0
    """A PASS's combined false-PASS bound: the product of its runs' records' bounds."""
    provisional: bool = False
    """A PASS whose combined bound misses the policy's target."""
    calibration: str = ""
    """The records its runs were judged under, e.g. `calibration-h200.json x3`."""

    @model_validator(mode="after")
    def _zero_unless_pass(self):
        if self.status is not Status.PASS and (self.score or self.provisional):
            raise ValueError("only a settled PASS carries a score or is provisional")
        return self


def settle(runs: list[Attempt], policy: SettlementPolicy = DEFAULT_SETTLEMENT) -> Settled | None:
    """Combines independent qualifications of one bundle, the first and its reproductions in order; None while every
    run passed and another one, within `policy.max_runs`, could bring the combined bound under the target."""
    if len(runs) < 2 or len({r.identity for r in runs}) != 1:
        raise ValueError("settlement needs at least two qualifications of one bundle identity")
    identity, statuses = runs[0].identity, {r.status for r in runs}
    if statuses == {Status.PASS}:
        bound = math.prod(r.bound for r in runs)
        left = policy.max_runs - len(runs)
        last = runs[-1].bound
        if bound > policy.target and left > 0 and last < 1 and bound * last**left <= policy.target:
            return None
        scores = [f"{r.score:.4f}" for r in runs]
        names = [r.calibration for r in runs]
        worth = (
            f"full: combined false-PASS bound {bound:.2%} <= the {policy.target:.0%} target"
            if bound <= policy.target
            else f"PROVISIONAL: combined false-PASS bound {bound:.2%} > the {policy.target:.0%} target"
        )
        return Settled(
            identity=identity,
            status=Status.PASS,
            score=min(r.score for r in runs),
            reason=f"reproduced: scores {', '.join(scores[:-1])} and {scores[-1]}, the "
            f"{'lower' if len(runs) == 2 else 'lowest'} is kept; {worth}",
            bound=bound,
            provisional=bound > policy.target,
            calibration=", ".join(f"{n} x{names.count(n)}" for n in dict.fromkeys(names)),
        )
    for name, run in zip(ORDINALS, runs, strict=False):
        if run.lost:
            what = "failed the correctness gate" if run.gate is Status.FAIL else "was broken by the candidate's engine"
            return Settled(
                identity=identity, status=Status.FAIL, score=0.0, reason=f"the {name} qualification {what}: {_why(run)}"
            )
    if statuses == {Status.N_A}:
        return Settled(identity=identity, status=Status.N_A, score=0.0, reason="the bundle never ran in the engine")
    name, run = next((n, r) for n, r in zip(ORDINALS, runs, strict=False) if r.status is not Status.PASS)
    what = "the qualification PASS did not reproduce" if Status.PASS in statuses else "no qualification passed"
    return Settled(
        identity=identity, status=Status.NO_DECISION, score=0.0, reason=f"{what}: {name} run {run.status}: {_why(run)}"
    )


def _why(run: Attempt) -> str:
    return run.reason or "no reason given"
