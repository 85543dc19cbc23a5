"""The validator's durable ledger (SQLite, WAL): submissions, their state changes and stage attempts."""

from .migrations import LEDGER_MIGRATIONS, Migration, migrate
from .records import FINAL, NEXT, ORDER, Attempt, State, Submission, Transition
from .store import Ledger, LedgerBusy, LedgerConflict

__all__ = [
    "FINAL",
    "LEDGER_MIGRATIONS",
    "NEXT",
    "ORDER",
    "Attempt",
    "Ledger",
    "LedgerBusy",
    "LedgerConflict",
    "Migration",
    "State",
    "Submission",
    "Transition",
    "migrate",
]
