"""From settled crowns (`hotfloat.validator`) to the chain's uid weight vector.

A crown says which bundle identities get which share of one slot's pool (winner 80%, runner-up 20%, the challenger
margin already applied by `hotfloat.validator.crown`). Every slot's crown weighs the same; an identity is paid to the
hotkey that committed it first (the intake's accepted owner), at that hotkey's current uid. A share nobody can take
(no runner-up, an owner no longer registered) is left out; the chain uses only proportions, so it is spread over the
shares that are assigned.
"""

from __future__ import annotations

from ..validator import Crown

WEIGHTS_EVERY = 100
"""Blocks per publication window unless told otherwise; `validator run` and `chain weights` share it so that both
name the same window the same way and the journal keeps them from publishing it twice."""


def window_round(head: int, every: int) -> str:
    """The one round naming: the window of `every` blocks `head` is in, so each window publishes at most once."""
    return f"every-{every}-{head // every}"


def crown_weights(crowns: list[Crown], owners: dict[str, str], hotkeys: list[str]) -> dict[int, float]:
    """uid -> weight from per-slot crowns, identity -> owning hotkey, and the metagraph's hotkeys by uid."""
    uid_of = {h: uid for uid, h in enumerate(hotkeys)}
    out: dict[int, float] = {}
    for crown in crowns:
        for identity, share in crown.weights.items():
            uid = uid_of.get(owners.get(identity, ""))
            if uid is not None and share > 0:
                out[uid] = out.get(uid, 0.0) + share / len(crowns)
    return out
