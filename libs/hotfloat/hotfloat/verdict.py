"""Outcomes as data: every stage reports a Status and a reason instead of raising."""

from enum import Enum


class Status(str, Enum):
    """PASS and FAIL judge the candidate; NO_DECISION means the infrastructure could not judge; N_A means not applicable."""

    PASS = "PASS"
    FAIL = "FAIL"
    NO_DECISION = "NO_DECISION"
    N_A = "N/A"


def combine(statuses: list[Status]) -> Status:
    """Overall status of many rows: any FAIL fails, else any NO_DECISION, else PASS if any passed, else N/A."""
    if Status.FAIL in statuses:
        return Status.FAIL
    if Status.NO_DECISION in statuses:
        return Status.NO_DECISION
    if Status.PASS in statuses:
        return Status.PASS
    return Status.N_A
