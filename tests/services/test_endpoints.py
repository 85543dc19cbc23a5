"""Many qualification endpoints, one validator: at most one run in flight per endpoint, the reproduction of a PASS
on another endpoint than its first run, a run whose endpoint dies retried on another, nothing recorded twice.

The servers are real gRPC qualification services on Unix sockets driven by the real clients, pipeline and ledger;
only the library's A/B inside them is a stand-in that takes a known wall time (`STAND_IN_S`). A real CPU
qualification boots three engine processes and is CPU-bound, so on this 2-core box three at once cannot finish
sooner than one after another, and the services have no knob that makes a run take a known time: what is measured
here is the validator keeping several endpoints busy, not the engines.
"""

from __future__ import annotations

import threading
import time

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hotfloat.ledger import State
from hotfloat.validator import Pipeline, Qualified, ScoreEvidence, StageEvidence
from hotfloat_services.serve import start as start_service
from hotfloat_services.validator.clients import StageClients
from hotfloat_services.validator.endpoints import Endpoints

from .conftest import STAND_IN_S, admitted

SERVING = health_pb2.HealthCheckResponse.SERVING


def _score(led, sockdir, token, targets, **kwargs) -> tuple[float, list[str]]:
    """Runs the queue through scored against `targets`; returns the seconds it took and every progress message."""
    notes: list[str] = []
    clients = StageClients(str(sockdir / "no-compiler.sock"), str(sockdir / "no-admission.sock"), targets, token=token)
    start = time.monotonic()
    try:
        Pipeline(
            led,
            clients,
            through=State.SCORED,
            backoff_s=0,
            on_progress=lambda sid, stage, msg: notes.append(msg),
            **kwargs,
        ).run()
    finally:
        clients.close()
    return time.monotonic() - start, notes


def _endpoints(led, sid) -> tuple[str | None, str | None]:
    first = led.evidence(sid, State.QUALIFIED, StageEvidence[Qualified]).record.endpoint
    return first, led.evidence(sid, State.SCORED, ScoreEvidence).record.endpoint


def _recorded_once(led, sid) -> None:
    states = [t.to_state for t in led.transitions(sid)]
    assert states == [State.RECEIVED, State.SCANNED, State.BUILT, State.ADMITTED, State.QUALIFIED, State.SCORED]


@pytest.mark.timed  # a wall-clock comparison of one endpoint against three
def test_three_endpoints_finish_a_queue_faster_than_one(stand_in, qualifiers, make_bundle, sockdir, token, tmp_path):
    """Six submissions, twelve qualifications, the same three pipeline workers: one endpoint runs them one after
    another; three run three at once, each reproduction on another endpoint than its first run."""
    one, three = qualifiers(1), qualifiers(3)
    slow_led, fast_led = admitted(tmp_path / "one.db", make_bundle, 6), admitted(tmp_path / "three.db", make_bundle, 6)
    slow, _ = _score(slow_led, sockdir, token, [r.target for r in one], workers=3)
    fast, notes = _score(fast_led, sockdir, token, [r.target for r in three], workers=3)
    print(f"one endpoint {slow:.1f} s, three {fast:.1f} s: {slow / fast:.2f}x")
    assert slow >= 12 * STAND_IN_S and slow / fast >= 1.5, (slow, fast)
    assert not any("waiting for the host" in n for n in notes)  # no endpoint was sent a second run while busy
    used = set()
    for led in (slow_led, fast_led):
        for sub in led.submissions():
            assert sub.state is State.SCORED, sub.reason
            _recorded_once(led, sub.id)
            assert [a.outcome for a in led.attempts(sub.id)] == ["done"] * 5
    for sub in fast_led.submissions():
        first, second = _endpoints(fast_led, sub.id)
        assert first != second and {first, second} <= {r.target for r in three}
        used |= {first, second}
    assert used == {r.target for r in three}
    slow_led.close()
    fast_led.close()


def test_a_run_whose_endpoint_dies_is_retried_on_another_and_recorded_once(
    stand_in, qualifiers, make_bundle, sockdir, token, tmp_path
):
    """One endpoint's server stops while its qualification runs: that try is counted as infrastructure, the run
    is done again elsewhere, every submission is scored once with both runs on distinct live endpoints."""
    running = qualifiers(3)
    dead = running[0]
    led = admitted(tmp_path / "l.db", make_bundle, 4)
    threading.Timer(STAND_IN_S / 3, lambda: dead.stop(0)).start()  # all three endpoints are busy by then
    _score(led, sockdir, token, [r.target for r in running], workers=3, max_attempts=3)
    retried = 0
    for sub in led.submissions():
        assert sub.state is State.SCORED, sub.reason
        _recorded_once(led, sub.id)
        attempts = led.attempts(sub.id)
        faults = [a for a in attempts if a.outcome == "retry"]
        assert all(a.stage in ("qualify", "score") and dead.target in a.reason for a in faults), faults
        assert [a.outcome for a in attempts if a.outcome != "retry"] == ["done"] * 5
        retried += len(faults)
        first, second = _endpoints(led, sub.id)
        assert first != second and dead.target not in (first, second)
    assert retried >= 1
    led.close()


def test_the_pool_holds_one_call_per_endpoint_and_sends_a_next_call_elsewhere(sockdir):
    pool = Endpoints([f"unix:{sockdir}/{n}.sock" for n in "abc"], lambda ch: ch, per_endpoint=1)
    a, b, c = pool.targets
    with pool.lease("x") as (first, _):
        assert first == a
        with pool.lease("y", avoid=b) as (second, _):
            assert second == c  # a is busy, b avoided
            got = []

            def fourth():
                with pool.lease("z") as (target, _):
                    got.append(target)

            waiter = threading.Thread(target=fourth)
            with pool.lease("w") as (third, _):
                assert third == b
                waiter.start()
                time.sleep(0.2)
                assert not got  # every endpoint busy: the fourth call waits
            waiter.join(5)
            assert got == [b]
    with pool.lease("x") as (again, _):
        assert again != a  # x's previous call went to a
    with pool.lease("x", avoid=c) as (elsewhere, _):
        assert elsewhere not in (c, again)
    single = Endpoints([f"unix:{sockdir}/only.sock"], lambda ch: ch, per_endpoint=1)
    with single.lease("x", avoid=single.targets[0]) as (only, _):
        assert only == single.targets[0]  # one endpoint serves every call
    pool.close()
    single.close()


def test_a_dead_endpoint_is_down_for_every_submission_until_it_serves_again(qualifiers, sockdir):
    """A transport failure marks the endpoint down for all callers; after the cool-off a health check decides, so
    a dead one stays down and a live one comes back; with every endpoint down a lease waits."""
    live = qualifiers(1)[0].target
    dead = f"unix:{sockdir}/dead.sock"
    pool = Endpoints([dead, live], lambda ch: ch, per_endpoint=1, cool_off_s=0.3)
    pool.mark_down(dead, "connection refused")
    for identity in "xyz":
        with pool.lease(identity) as (target, _):
            assert target == live  # the first in order, and free, but down for everyone
    pool.mark_down(live, "connection reset")
    start = time.monotonic()
    with pool.lease("w") as (target, _):
        waited = time.monotonic() - start
    assert target == live and waited >= 0.3  # nothing was up: the lease waited for the health check
    assert pool.down() == [dead]
    pool.close()


def test_a_killed_endpoint_costs_one_try_and_tries_wait_for_an_endpoint(
    stand_in, qualifiers, make_bundle, sockdir, token, tmp_path
):
    """Three submissions on two endpoints, one of them killed before the run: the one call it got fails and marks it
    down, no other submission is sent there during the cool-off, and at no time is a try recorded for more calls
    than there are live endpoints (a call waiting for an endpoint is no try)."""
    live, dead = qualifiers(2)
    dead.stop(0)
    led = admitted(tmp_path / "l.db", make_bundle, 3)
    most, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            open_tries = sum(a.outcome is None for s in led.submissions() for a in led.attempts(s.id))
            most[0] = max(most[0], open_tries)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        clients = StageClients(
            str(sockdir / "no-compiler.sock"),
            str(sockdir / "no-admission.sock"),
            [dead.target, live.target],
            token=token,
            cool_off_s=60,
        )
        Pipeline(led, clients, through=State.SCORED, workers=3, backoff_s=0).run()
        clients.close()
    finally:
        done.set()
        watcher.join()
    faults = [a for s in led.submissions() for a in led.attempts(s.id) if a.outcome == "retry"]
    assert len(faults) == 1 and dead.target in faults[0].reason, faults
    assert 1 <= most[0] <= 2, most  # three workers, two endpoints: the third call waited without a try
    for sub in led.submissions():
        assert sub.state is State.SCORED, sub.reason
        _recorded_once(led, sub.id)
    led.close()


def test_an_endpoint_restarted_after_a_long_outage_serves_again_within_seconds(qualifiers, sockdir, token):
    """The server behind an endpoint stops for 30 s (its channel's failed dials back off meanwhile) and starts again
    on the same socket: the pool leases it again within seconds (1.9-3.7 s measured; with gRPC's default backoff,
    which grows to 120 s, 11.2 and 15.1 s after this outage, and up to two minutes after a longer one)."""
    server = qualifiers(1)[0]
    pool = Endpoints([server.target], lambda ch: ch, per_endpoint=1, cool_off_s=0.3)
    with pool.lease("a") as (_, ch):  # the channel is connected before the outage
        assert health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5).status == SERVING
    server.stop(0)
    pool.mark_down(server.target, "stopped")
    back: list[float] = []

    def lease():
        with pool.lease("b") as (target, _):
            back.append(time.monotonic())

    waiter = threading.Thread(target=lease)
    waiter.start()
    time.sleep(30)  # the outage: every 0.3 s a health check fails on the backed-off channel
    assert not back, "the pool leased an endpoint whose server was stopped"
    restarted = start_service("qualification", server.target.removeprefix("unix:"), token=token, concurrency=1)
    up = time.monotonic()
    try:
        waiter.join(120)
        took = back[0] - up
        print(f"leased again {took:.2f} s after the restart")
        assert took < 8, took  # max backoff 5 s (+20% jitter) plus a 0.3 s cool-off; gRPC's default: up to 120 s
    finally:
        restarted.stop(0)
        pool.close()
