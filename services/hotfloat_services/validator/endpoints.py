"""Several endpoints serving one stage: each call leases a free one, so an endpoint never runs more calls than it may
(one qualification per endpoint: two A/Bs on one GPU would time each other), and a submission's next call goes to
another endpoint when there is one (the reproduction of a PASS, or a retry after its endpoint died)."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from hotfloat.errors import InputError

from ..common.transport import Tls, channel

S = TypeVar("S")


class Endpoints(Generic[S]):
    """One channel and stub per endpoint; `per_endpoint` calls at most on each (None: no bound, least busy first)."""

    def __init__(self, targets: Sequence[str], stub: Callable, *, tls: Tls | None = None, per_endpoint: int | None = None):
        if not targets or len(set(targets)) != len(targets):
            raise InputError(f"endpoints must be given, each once: {list(targets)}")
        self._channels = {t: channel(t, tls) for t in targets}
        self._stubs: dict[str, S] = {t: stub(c) for t, c in self._channels.items()}
        self._per = per_endpoint
        self._busy = dict.fromkeys(targets, 0)
        self._turn = dict.fromkeys(targets, 0)
        """When each endpoint last got a call: among the free ones, the least recently used goes first."""
        self._last: dict[str, str] = {}
        """Identity -> the endpoint its latest call went to."""
        self._ticks = itertools.count(1)
        self._free = threading.Condition()

    @property
    def targets(self) -> list[str]:
        return list(self._busy)

    @contextlib.contextmanager
    def lease(self, identity: str, avoid: str | None = None) -> Iterator[tuple[str, S]]:
        """Waits for a free endpoint and holds it for the call. It avoids `avoid` (the endpoint of the run this call
        must be independent of) and then the endpoint of this identity's previous call (which may have died), as far
        as other endpoints exist; with one endpoint, that one serves every call."""
        with self._free:
            shunned = ({avoid, self._last.get(identity)}, {avoid}, set())
            eligible = next(e for e in ([t for t in self._busy if t not in s] for s in shunned) if e)
            while not (free := [t for t in eligible if self._per is None or self._busy[t] < self._per]):
                self._free.wait()
            name = min(free, key=lambda t: (self._busy[t], self._turn[t]))
            self._busy[name] += 1
            self._turn[name] = next(self._ticks)
            self._last[identity] = name
        try:
            yield name, self._stubs[name]
        finally:
            with self._free:
                self._busy[name] -= 1
                self._free.notify_all()

    def close(self) -> None:
        for c in self._channels.values():
            c.close()
