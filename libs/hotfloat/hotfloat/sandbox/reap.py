"""Killing every member of a group of processes that may still be forking: SIGKILL, look again, until none is left.

The cgroup teardown lists members from cgroup.procs; a process forked between the listing and the kill is caught
next round.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable


def kill_until_gone(members: Callable[[], Iterable[int]], *, rounds: int, pause_s: float) -> bool:
    """SIGKILLs `members()` until it is empty; False if members were still alive after `rounds` rounds."""
    for _ in range(rounds):
        alive = set(members())
        if not alive:
            return True
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(pause_s)
    return not set(members())
