"""Settlement, the one reproduction rule: a PASS counts only once an independent second qualification also passes,
and the lower score stands. A run that failed the correctness gate settles FAIL (a kernel that is right only some of
the time is wrong), and so does a run the candidate's own engine broke (it died, stalled, forged a frame or ran GPU
work while another engine was timed: behaving in one run and cheating in the other must not buy a re-roll); any
other run that did not pass (slower this time, undecided) settles NO_DECISION: not reproduced, never a loss."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from ..record import Record
from ..verdict import Status


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

    @property
    def lost(self) -> bool:
        """Failed by the candidate's own doing: its gate, or its engine's fault."""
        return self.status is Status.FAIL and (self.gate is Status.FAIL or (self.fault or "").startswith("C:"))


class Settled(Record):
    """A bundle's standing after two qualifications."""

    identity: str
    status: Status
    """PASS only when both passed; FAIL if either failed its correctness gate; N/A if neither ran; else NO_DECISION."""
    score: Annotated[float, Field(ge=0, le=1)]
    reason: str

    @model_validator(mode="after")
    def _zero_unless_pass(self):
        if self.status is not Status.PASS and self.score:
            raise ValueError("only a settled PASS carries a score")
        return self


def settle(first: Attempt, second: Attempt) -> Settled:
    """Combines two independent qualifications of the same bundle; a single lucky run never counts."""
    if first.identity != second.identity:
        raise ValueError("both attempts must qualify the same bundle identity")
    statuses = {first.status, second.status}
    if statuses == {Status.PASS}:
        low = min(first.score, second.score)
        return Settled(
            identity=first.identity,
            status=Status.PASS,
            score=low,
            reason=f"reproduced: scores {first.score:.4f} and {second.score:.4f}, the lower is kept",
        )
    runs = {"first": first, "second": second}
    for name, run in runs.items():
        if run.lost:
            what = "failed the correctness gate" if run.gate is Status.FAIL else "was broken by the candidate's engine"
            return Settled(
                identity=first.identity,
                status=Status.FAIL,
                score=0.0,
                reason=f"the {name} qualification {what}: {_why(run)}",
            )
    if statuses == {Status.N_A}:
        return Settled(
            identity=first.identity, status=Status.N_A, score=0.0, reason="the bundle never ran in the engine"
        )
    name, run = next((n, r) for n, r in runs.items() if r.status is not Status.PASS)
    what = "the qualification PASS did not reproduce" if Status.PASS in statuses else "no qualification passed"
    return Settled(
        identity=first.identity,
        status=Status.NO_DECISION,
        score=0.0,
        reason=f"{what}: {name} run {run.status}: {_why(run)}",
    )


def _why(run: Attempt) -> str:
    return run.reason or "no reason given"
