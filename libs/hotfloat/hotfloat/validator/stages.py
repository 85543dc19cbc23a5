"""The stages interface: what the pipeline asks of the compiler, admission and qualification, whoever serves them.

The pipeline knows only this protocol and these records; `hotfloat_services.validator.clients` implements it over
gRPC. A transport fault surfaces as an `InfrastructureError` (retried, never judged); a service that refuses the
validator itself raises `StageRefused` (the run stops, nothing is judged).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Generic, Protocol

from ..compiler import BuildRecord
from ..errors import InfrastructureError
from ..scan import ScanReport
from ..verdict import Status
from .evidence import Admitted, Qualified, R, StageEvidence

OnProgress = Callable[[str, str], None]
"""Called with (stage, message) for each progress event a service streams."""
OnStart = Callable[[str], None]
"""Called once with the endpoint's name when a call holds it, before any work: the pipeline records the try then."""


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """What a stage decided: its status and reasons, the service's record, and any artifact bytes to keep."""

    status: Status
    reasons: list[str]
    evidence: R
    artifacts: dict[str, bytes] = field(default_factory=dict)

    def ledger_evidence(self) -> StageEvidence[R]:
        """The evidence to record: verdict, the service's record, and artifact digests (their bytes go to blobs)."""
        return StageEvidence[type(self.evidence)](
            status=self.status,
            reasons=self.reasons,
            record=self.evidence,
            artifacts={n: sha256(d).hexdigest() for n, d in sorted(self.artifacts.items())},
        )

    @classmethod
    def from_ledger(cls, row: StageEvidence[R], artifacts: dict[str, bytes]) -> Outcome[R]:
        """The outcome recorded evidence was written from, with its artifacts' bytes read back from the blobs."""
        return cls(row.status, row.reasons, row.record, artifacts)


class StageRefused(InfrastructureError):
    """A service refused the validator itself (credentials, a stage it does not offer): a deployment fault."""


class Stages(Protocol):
    """One call per stage; admission gets the build's outcome as recorded at BUILT."""

    def scan(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[ScanReport]: ...

    def build(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[BuildRecord]: ...

    def admit(
        self, archive: bytes, identity: str, built: Outcome[BuildRecord], on_progress: OnProgress, *, on_start: OnStart
    ) -> Outcome[Admitted]: ...

    def qualify(
        self, archive: bytes, identity: str, on_progress: OnProgress, *, on_start: OnStart, avoid: str | None = None
    ) -> Outcome[Qualified]:
        """`avoid`: the endpoint of the run this one must be independent of, to be left alone when another exists."""
