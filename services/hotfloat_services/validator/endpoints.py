"""Several endpoints serving one stage: each call leases a free one, so an endpoint never runs more calls than it may
(one qualification per endpoint: two A/Bs on one GPU would time each other), and a submission's next call goes to
another endpoint when there is one (the reproduction of a PASS, or a retry after its endpoint died).

An endpoint whose call failed in transport is down for every submission for a cool-off, then given calls again
only once its health check says it serves: the other submissions do not spend their tries on it. With every
endpoint down a lease waits; the pipeline records an attempt only once its call holds an endpoint, so waiting for
the infrastructure costs no submission a try and judges nothing; a validator that stops abandons those waits.

The validator's channels (`dial`) come back quickly after an endpoint restarts: gRPC's default reconnect backoff
grows to 120 s, so an endpoint back after a long outage could fail four health checks while it serves."""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hotfloat.errors import InfrastructureError, InputError

from ..common.transport import Tls, channel

S = TypeVar("S")
COOL_OFF_S = 30.0
"""How long an endpoint that failed in transport gets no call before its health is checked again."""
PROBE_S = 2.0
"""Deadline of that health check."""
DIAL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 500),  # a restarted pod or service is dialled again soon (default 1 s)
    ("grpc.max_reconnect_backoff_ms", 5_000),  # far under COOL_OFF_S, so the next health check finds it (default 120 s)
    ("grpc.min_reconnect_backoff_ms", 5_000),  # one dial's deadline (default 20 s): TCP + TLS on a LAN take ms
    ("grpc.keepalive_time_ms", 360_000),  # above servers' default 5 min floor: pinging more often gets a GOAWAY
    ("grpc.keepalive_timeout_ms", 20_000),  # a host gone silent mid-call fails in ~6 min, not at the call's deadline
    ("grpc.http2.max_pings_without_data", 0),  # a qualification may stream nothing for many minutes
)
"""The validator's channel options besides the servers' message bounds: a dead endpoint costs a dial per 5 s."""
log = logging.getLogger("hotfloat.validator")


def dial(target: str, tls: Tls | None = None) -> grpc.Channel:
    """A channel to one service with the validator's `DIAL_OPTIONS`."""
    return channel(target, tls, DIAL_OPTIONS)


class Endpoints(Generic[S]):
    """One channel and stub per endpoint; `per_endpoint` calls at most on each (None: no bound, least busy first)."""

    def __init__(
        self,
        targets: Sequence[str],
        stub: Callable,
        *,
        tls: Tls | None = None,
        per_endpoint: int | None = None,
        cool_off_s: float = COOL_OFF_S,
    ):
        if not targets or len(set(targets)) != len(targets):
            raise InputError(f"endpoints must be given, each once: {list(targets)}")
        self._channels = {t: dial(t, tls) for t in targets}
        self._stubs: dict[str, S] = {t: stub(c) for t, c in self._channels.items()}
        self._per, self._cool_off = per_endpoint, cool_off_s
        self._busy = dict.fromkeys(targets, 0)
        self._turn = dict.fromkeys(targets, 0)
        """When each endpoint last got a call: among the free ones, the least recently used goes first."""
        self._last: dict[str, str] = {}
        """Identity -> the endpoint its latest call went to."""
        self._down: dict[str, float] = {}
        """Endpoint -> the monotonic time its cool-off ends; it is up again once a health check after that passes."""
        self._probing: set[str] = set()
        self._abandoned = False
        self._ticks = itertools.count(1)
        self._free = threading.Condition()

    @property
    def targets(self) -> list[str]:
        return list(self._busy)

    def down(self) -> list[str]:
        """The endpoints now cooling off or being re-checked."""
        with self._free:
            return list(self._down)

    def mark_down(self, name: str, why: str) -> None:
        """Takes `name` out of service for every caller (its call failed in transport) until its cool-off ends."""
        with self._free:
            if name not in self._down:
                log.warning("endpoint %s is down for %.0f s: %s", name, self._cool_off, why)
            self._down[name] = time.monotonic() + self._cool_off

    def abandon(self) -> None:
        """The validator is stopping: every call waiting for an endpoint, and any later one, raises at once; calls
        that hold an endpoint go on."""
        with self._free:
            self._abandoned = True
            self._free.notify_all()

    @contextlib.contextmanager
    def lease(self, identity: str, avoid: str | None = None) -> Iterator[tuple[str, S]]:
        """Waits for a free endpoint that is up and holds it for the call. It avoids `avoid` (the endpoint of the run
        this call must be independent of) and then the endpoint of this identity's previous call (which may have
        died), as far as other endpoints are up; with one up, that one serves every call."""
        while (name := self._take(identity, avoid)) is None:
            self._recheck()
        try:
            yield name, self._stubs[name]
        finally:
            with self._free:
                self._busy[name] -= 1
                self._free.notify_all()

    def _take(self, identity: str, avoid: str | None) -> str | None:
        """A free endpoint, now leased; None (after waiting for a change) when none is free and up."""
        with self._free:
            if self._abandoned:
                raise InfrastructureError("the validator is stopping: no endpoint was leased")
            up = [t for t in self._busy if t not in self._down]
            shunned = ({avoid, self._last.get(identity)}, {avoid}, set())
            eligible = next((e for e in ([t for t in up if t not in s] for s in shunned) if e), [])
            free = [t for t in eligible if self._per is None or self._busy[t] < self._per]
            if not free:
                ends = [end for t, end in self._down.items() if t not in self._probing]
                self._free.wait(max(0.0, min(ends) - time.monotonic()) if ends else None)
                return None
            name = min(free, key=lambda t: (self._busy[t], self._turn[t]))
            self._busy[name] += 1
            self._turn[name] = next(self._ticks)
            self._last[identity] = name
            return name

    def _recheck(self) -> None:
        """Health-checks each endpoint whose cool-off has ended, outside the lock (a check may take PROBE_S): one
        that serves is up again, any other cools off once more."""
        with self._free:
            now = time.monotonic()
            due = (
                [] if self._abandoned else [t for t, end in self._down.items() if end <= now and t not in self._probing]
            )
            self._probing.update(due)
        for name in due:
            serving = self._serving(name)
            with self._free:
                self._probing.discard(name)
                if serving:
                    del self._down[name]
                    log.warning("endpoint %s serves again", name)
                else:
                    self._down[name] = time.monotonic() + self._cool_off
                self._free.notify_all()

    def _serving(self, name: str) -> bool:
        try:
            reply = health_pb2_grpc.HealthStub(self._channels[name]).Check(
                health_pb2.HealthCheckRequest(), timeout=PROBE_S
            )
        except grpc.RpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def close(self) -> None:
        for c in self._channels.values():
            c.close()
