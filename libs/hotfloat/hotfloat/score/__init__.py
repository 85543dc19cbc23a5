"""Scores and crowns: settle a candidate from two independent qualifications, then share the pool between the
winner (80%) and the runner-up (20%), with a 1-point margin before a challenger dethrones the winner.

    from hotfloat.score import Attempt, crown, settle
    s = settle(Attempt(identity=h, status="PASS", score=0.031), Attempt(identity=h, status="PASS", score=0.027))
    crown([s, ...], incumbent=previous_winner_identity)   # -> Crown(winner, runner_up, weights)
"""

from .crowns import CHALLENGE_MARGIN, RUNNER_UP_SHARE, WINNER_SHARE, Crown, crown
from .settle import Attempt, Settled, settle

__all__ = ["CHALLENGE_MARGIN", "RUNNER_UP_SHARE", "WINNER_SHARE", "Attempt", "Crown", "Settled", "crown", "settle"]
