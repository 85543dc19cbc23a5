"""Outcomes as data: every stage reports a Status and a reason instead of raising."""

from enum import StrEnum


class Status(StrEnum):
    """PASS and FAIL judge the candidate; NO_DECISION means the infrastructure could not judge; N_A means not applicable.
    The one status type of every record; a str whose value is the wire word, so it prints and compares as that word."""

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
