"""Records of a multi-rank verification: what each rank may say (bounded, schema-checked) and the run's verdict."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..record import Record
from ..verdict import Status


class RankReport(Record):
    """The hello a rank sends once it joined the group and imported the candidate; untrusted, so strict and small."""

    rank: Annotated[int, Field(ge=0, le=1023)]
    world: Annotated[int, Field(ge=2, le=1024)]
    op: Annotated[str, Field(max_length=200)] | None
    """The op key the rank loaded."""
    identity: Annotated[str, Field(max_length=64)]
    backend: Annotated[str, Field(max_length=16)]
    group_size: Annotated[int, Field(ge=0, le=1024)]
    """Size of the group the candidate received: must be the validator's world."""


class CaseRow(Record):
    """One (dtype, shape) step of the burst, judged on every rank."""

    index: int
    dtype: str
    shape: str
    status: Status
    max_abs_err: float | None = None
    reason: str = ""


class CollectiveReport(Record):
    """PASS only if every rank ran every case of every op and matched the fp32 reference; any fault aborts with a reason."""

    bundle_id: str
    identity: str
    world_size: int
    backend: str
    device: str
    seed: int
    sandboxed: bool
    status: Status
    reasons: list[str]
    ops: list[str] = Field(default_factory=list)
    rows: list[CaseRow] = Field(default_factory=list)
    seconds: float = 0.0
