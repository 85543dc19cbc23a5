"""Crowns: the fastest settled candidate wins 80% of the pool, the runner-up 20%.

The incumbent keeps the crown unless a challenger beats the incumbent's *fresh* score (re-qualified in the same
window, against the same baseline) by CHALLENGE_MARGIN, so measurement noise cannot churn the winner. A share with
nobody to take it (no runner-up, no winner) stays unassigned; what happens to it is the chain layer's policy.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from ..record import Record
from ..verdict import Status
from .settle import Settled

WINNER_SHARE = 0.8
RUNNER_UP_SHARE = 0.2
CHALLENGE_MARGIN = 0.01
"""A challenger's score must exceed the incumbent's fresh score by this much (1 percentage point of improvement)."""


class Crown(Record):
    """Who holds the crown and the pool share each identity receives."""

    winner: str | None
    runner_up: str | None
    weights: dict[str, Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]]
    """Identity -> share of the pool; sums to at most 1."""
    reason: str
    provisional: list[str] = []
    """Share holders whose settled PASS misses the validator's calibration target (crowned only under the
    `crowned` settlement policy)."""

    @model_validator(mode="after")
    def _one_pool(self):
        """A crown read back from a file must not hand out more than its pool (or NaN, which every check passes)."""
        if sum(self.weights.values()) > 1 + 1e-9:
            raise ValueError(f"shares sum to {sum(self.weights.values()):g}, more than the whole pool")
        return self


def crown(settled: list[Settled], incumbent: str | None = None) -> Crown:
    """Ranks settled PASS candidates (including the incumbent's fresh settlement, if it still passes)."""
    passing = sorted(
        (s for s in settled if s.status is Status.PASS and s.score > 0), key=lambda s: (-s.score, s.identity)
    )
    if len({s.identity for s in passing}) != len(passing):
        raise ValueError("one settlement per identity")
    if not passing:
        return Crown(winner=None, runner_up=None, weights={}, reason="no settled PASS candidate")
    champ = next((s for s in passing if s.identity == incumbent), None)
    best = passing[0]
    if champ is None:
        winner, why = (
            best,
            "fastest settled candidate" + ("" if incumbent is None else "; the incumbent no longer passes"),
        )
    elif best is champ or best.score <= champ.score + CHALLENGE_MARGIN:
        winner, why = (
            champ,
            "incumbent defends"
            if best is champ
            else (
                f"challenger {best.score:.4f} does not beat the incumbent's fresh {champ.score:.4f} by {CHALLENGE_MARGIN:.0%}"
            ),
        )
    else:
        winner, why = (
            best,
            f"challenger {best.score:.4f} beats the incumbent's fresh {champ.score:.4f} by more than {CHALLENGE_MARGIN:.0%}",
        )
    rest = [s for s in passing if s is not winner]
    runner = rest[0] if rest else None
    weights = {winner.identity: WINNER_SHARE}
    if runner is not None:
        weights[runner.identity] = RUNNER_UP_SHARE
    provisional = [s.identity for s in (winner, runner) if s is not None and s.provisional]
    return Crown(
        winner=winner.identity,
        runner_up=runner.identity if runner else None,
        weights=weights,
        reason=why,
        provisional=provisional,
    )
