"""The validator's state machine: submissions move through the stages (`Stages`), a reproduced PASS is settled
(`settle`), each slot set crowned (`crown`, 80% winner / 20% runner-up, 1-point challenger margin) and its standings
kept in the ledger (`standings`). Services and the CLI are adapters around it; it imports no grpc.

    from hotfloat.validator import Attempt, SettlementPolicy, crown, settle
    runs = [Attempt(identity=h, status="PASS", score=0.031, bound=0.133), Attempt(identity=h, status="PASS", ...)]
    s = settle(runs, SettlementPolicy())   # None: reproduce again; else Settled (lowest score, bound, provisional)
    crown([s, ...], incumbent=previous_winner_identity)   # -> Crown(winner, runner_up, weights, provisional)
"""

from .crowns import CHALLENGE_MARGIN, RUNNER_UP_SHARE, WINNER_SHARE, Crown, crown
from .evidence import Admitted, Qualified, Run, ScoreEvidence, StageEvidence
from .local import LocalStages, StageConfig
from .pipeline import Pipeline
from .settle import Attempt, SettlementPolicy, Settled, settle
from .stages import OnProgress, Outcome, StageRefused, Stages

__all__ = [
    "CHALLENGE_MARGIN",
    "RUNNER_UP_SHARE",
    "WINNER_SHARE",
    "Admitted",
    "Attempt",
    "Crown",
    "LocalStages",
    "OnProgress",
    "Outcome",
    "Pipeline",
    "Qualified",
    "Run",
    "ScoreEvidence",
    "SettlementPolicy",
    "Settled",
    "StageConfig",
    "StageEvidence",
    "StageRefused",
    "Stages",
    "crown",
    "settle",
]
