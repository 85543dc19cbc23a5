"""The evidence a stage leaves in the ledger, as typed records: the verdict the service gave, its own record (the
scan report, the build record, the admission reports, the qualification evidence), and the digests of the artifacts
kept as ledger blobs. The score stage adds every qualification run, each with the calibration it was judged under, and
the settlement."""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, Field

from ..admission import AdmissionReport
from ..compiler import BuildRecord
from ..qualify import Evidence
from ..qualify.calibration import Calibration
from ..record import Record
from ..scan import ScanReport
from ..verdict import Status
from ..verify import VerifyReport
from .settle import Attempt, Settled

SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
R = TypeVar("R", bound=BaseModel)


class Admitted(Record):
    """Both admission checks (the verify protocol on the bundle's ops, the Driver-API load of built cubins) and the
    device they ran on."""

    verify: VerifyReport
    native: AdmissionReport | None = None
    """None when the build produced no cubins."""
    device: str


class Qualified(Evidence):
    """The qualification service's evidence with the score its reply carried and the endpoint that ran it."""

    score: float
    endpoint: str | None = None
    """Where the run ran, so the reproduction goes elsewhere; None in records from before several endpoints."""


class StageEvidence(Record, Generic[R]):
    """What a stage's service decided, recorded with the state the submission moved to; `R` is the stage's record."""

    status: Status
    reasons: list[str]
    record: R
    """The service's library record as its reply carried it."""
    artifacts: dict[str, SHA256] = Field(default_factory=dict)
    """Artifact name -> digest of its bytes, which the ledger keeps as blobs."""


class Run(Record):
    """One of the qualifications the score stage settles (the first and its reproductions)."""

    status: Status
    score: float
    """The score the qualification computed; 0 unless it passed."""
    seed: int | None
    """The workload seed the service drew; no two runs share one."""
    reasons: list[str]
    gate: Status | None = None
    """The correctness gate's verdict in the run (None in runs recorded before it was kept here)."""
    fault: str | None = None
    """The engine fault that ended the run, as its decision says."""
    calibration: Calibration | None = None
    """The calibration record the run was judged under, or none and why; None: the run named none (evidence v3)."""
    endpoint: str | None = None
    """Where it ran, so the next reproduction goes elsewhere."""

    @classmethod
    def of(cls, evidence: StageEvidence[Qualified]) -> Run:
        """This qualification as the score stage reads it: verdict, score, the workload seed it was drawn with and
        the calibration it was judged under."""
        decision = evidence.record.decision
        return cls(
            status=evidence.status,
            score=evidence.record.score,
            seed=evidence.record.workload.seed,
            reasons=evidence.reasons,
            gate=decision.gate,
            fault=decision.fault,
            calibration=evidence.record.calibration,
            endpoint=evidence.record.endpoint,
        )

    def attempt(self, identity: str) -> Attempt:
        """The run as settlement reads it; only a PASS carries its score."""
        c = self.calibration
        return Attempt(
            identity=identity,
            status=self.status,
            score=self.score if self.status is Status.PASS else 0.0,
            gate=self.gate,
            fault=self.fault,
            reason="; ".join(self.reasons),
            bound=1.0 if c is None else c.bound,
            calibration=getattr(c, "record", "none"),
        )


class ScoreEvidence(StageEvidence[Qualified]):
    """The last qualification's evidence, with every run and, for a settled PASS, the settlement and slot set."""

    runs: list[Run]
    settled: Settled | None = None
    slot_set: str | None = None
    """The pool the bundle competes in, recorded with its score."""


# The evidence each stage records with the state it moves a submission to (forward, failed or undecided): the table
# a ledger reads it back by (`Ledger(path, evidence=EVIDENCE)`). One generic per statement: pydantic reads the source
# line of each parametrized record for its field docstrings, and a multi-line literal breaks that.
EVIDENCE: dict[str, type[StageEvidence]] = {"score": ScoreEvidence}
EVIDENCE["scan"] = StageEvidence[ScanReport]
EVIDENCE["build"] = StageEvidence[BuildRecord]
EVIDENCE["admit"] = StageEvidence[Admitted]
EVIDENCE["qualify"] = StageEvidence[Qualified]
