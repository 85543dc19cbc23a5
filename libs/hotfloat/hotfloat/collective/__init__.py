"""Multi-rank verification of collective slots (gloo on CPU, NCCL on CUDA)."""

from .cases import burst
from .records import CaseRow, CollectiveReport, RankReport
from .runner import verify_collective

__all__ = ["CaseRow", "CollectiveReport", "RankReport", "burst", "verify_collective"]
