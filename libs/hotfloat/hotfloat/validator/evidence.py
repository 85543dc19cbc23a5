"""The evidence a stage leaves in the ledger, as typed records: the verdict the service gave, its own record, and the
digests of the artifacts kept as ledger blobs. The score stage adds both qualification runs and the settlement."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ..record import Record
from ..verdict import Status
from .settle import Settled

SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class StageEvidence(Record):
    """What a stage's service decided, recorded with the state the submission moved to."""

    status: Status
    reasons: list[str]
    record: dict[str, Any]
    """The service's library record as it sent it (scan report, build record, admission reports, qualification
    evidence), plus the reply's typed extras (the admission device, the qualification score)."""
    artifacts: dict[str, SHA256] = Field(default_factory=dict)
    """Artifact name -> digest of its bytes, which the ledger keeps as blobs."""

    def run(self) -> Run:
        """This qualification as the score stage reads it: verdict, score and the workload seed it was drawn with."""
        return Run(status=self.status, score=self.record.get("score", 0.0),
                   seed=(self.record.get("workload") or {}).get("seed"), reasons=self.reasons)


class Run(Record):
    """One of the two qualifications the score stage settles."""

    status: Status
    score: float
    """The score the qualification computed; 0 unless it passed."""
    seed: int | None
    """The workload seed the service drew; the two runs must differ."""
    reasons: list[str]


class ScoreEvidence(StageEvidence):
    """The second qualification's evidence, with both runs and, for a settled PASS, the settlement and slot set."""

    runs: list[Run]
    settled: Settled | None = None
    slot_set: str | None = None
    """The pool the bundle competes in, recorded with its score."""
