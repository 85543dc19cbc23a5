"""The coordinated arm check: every rank of one engine must have armed the same bundle, or none of them may run.

A rank that quietly served the stock path while its peers ran the bundle would make tensor-parallel results diverge
(and, for collectives, deadlock), so each rank publishes what it armed (or the error it hit) and all of them compare.
"""

from __future__ import annotations

from .errors import RankMismatchError

FAILED = "load-failed"


def check_ranks_armed(armed: str | None, *, error: str | None = None, group=None) -> list[str]:
    """Gathers each rank's armed identity ("" when null-armed, FAILED on a load error) and raises unless all agree.

    Call it on every rank after arming (passing the load error message instead of raising first, so peers are not
    left waiting in the collective); returns the per-rank list when the engine may start.
    """
    import torch.distributed as dist

    mine = f"{FAILED}: {error}" if error is not None else (armed or "")
    if not (dist.is_available() and dist.is_initialized()):
        seen = [mine]
    else:
        seen = [None] * dist.get_world_size(group)
        dist.all_gather_object(seen, mine, group=group)
    if error is not None or any(s.startswith(FAILED) for s in seen) or len(set(seen)) != 1:
        detail = ", ".join(f"rank {i}: {s or 'null-armed'}" for i, s in enumerate(seen))
        raise RankMismatchError(
            f"ranks did not all arm the same bundle ({detail}); aborting rather than mixing kernels"
        )
    return seen
