"""Ledger records: the submission states, their order, and the rows the ledger hands out."""

from __future__ import annotations

from enum import Enum

from pydantic import Field, SerializeAsAny

from ..record import Record


class State(str, Enum):
    """Where a submission is; SCORED, FAILED and NO_DECISION are final."""

    RECEIVED = "received"
    SCANNED = "scanned"
    BUILT = "built"
    ADMITTED = "admitted"
    QUALIFIED = "qualified"
    SCORED = "scored"
    FAILED = "failed"
    NO_DECISION = "no_decision"

    @property
    def final(self) -> bool:
        return self in FINAL

    @property
    def stage(self) -> str | None:
        """The work that moves a submission out of this state, or None for a final state."""
        return NEXT.get(self, (None, None))[0]


FINAL = frozenset({State.SCORED, State.FAILED, State.NO_DECISION})
NEXT: dict[State, tuple[str, State]] = {
    State.RECEIVED: ("scan", State.SCANNED),
    State.SCANNED: ("build", State.BUILT),
    State.BUILT: ("admit", State.ADMITTED),
    State.ADMITTED: ("qualify", State.QUALIFIED),
    State.QUALIFIED: ("score", State.SCORED),
}
ORDER = (State.RECEIVED, State.SCANNED, State.BUILT, State.ADMITTED, State.QUALIFIED, State.SCORED)


class Submission(Record):
    """One bundle offered for admission, and where it is now."""

    id: int
    identity: str
    """Canonical bundle identity; one submission per identity (the first submitter keeps it)."""
    bundle_id: str
    submitter: str
    """Who offered it (e.g. a miner hotkey); free text to the ledger."""
    source: str
    """Where it came from (a chain commitment, a path); free text to the ledger."""
    state: State
    reason: str
    """Why it is in its state; for FAILED and NO_DECISION the deciding reason."""
    archive_sha256: str
    """Digest of the stored archive blob the stages receive."""
    created_at: float
    updated_at: float


class Transition(Record):
    """One committed state change, with the evidence the stage returned."""

    submission_id: int
    from_state: State | None
    to_state: State
    reason: str
    evidence: SerializeAsAny[Record] | dict | None = Field(union_mode="left_to_right")
    """The evidence the stage that left `from_state` wrote, read as its record by the ledger's table of stage
    records (`Ledger(evidence=...)`, the validator's `EVIDENCE`); its JSON object in a ledger opened without one."""
    at: float


class Attempt(Record):
    """One try at a stage; outcome None means it is running or the process died during it."""

    submission_id: int
    stage: str
    number: int
    outcome: str | None
    reason: str
    started_at: float
