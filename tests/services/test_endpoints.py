"""Many qualification endpoints, one validator: at most one run in flight per endpoint, the reproduction of a PASS
on another endpoint than its first run, a run whose endpoint dies retried on another, nothing recorded twice.

The servers are real gRPC qualification services on Unix sockets driven by the real clients, pipeline and ledger;
only the library's A/B inside them is a stand-in that takes a known wall time (`STAND_IN_S`). A real CPU
qualification boots three engine processes and is CPU-bound, so on this 2-core box three at once cannot finish
sooner than one after another, and the services have no knob that makes a run take a known time: what is measured
here is the validator keeping several endpoints busy, not the engines.
"""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.compiler import BuildRecord
from hotfloat.ledger import Ledger, State
from hotfloat.qualify import Decision, EngineSpec, Evidence, QualifyResult, RuleConfig
from hotfloat.qualify.workload import make_workload
from hotfloat.scan import ScanReport
from hotfloat.validator import Admitted, Outcome, Pipeline, Qualified, ScoreEvidence, StageEvidence, local
from hotfloat.verdict import Status
from hotfloat.verify import VerifyReport
from hotfloat_services.serve import start as start_service
from hotfloat_services.validator.clients import StageClients
from hotfloat_services.validator.endpoints import Endpoints

STAND_IN_S = 1.5
"""Wall time of one stand-in qualification."""
SEEDS = itertools.count(100)


class Admitting:
    """Scan, build and admission that pass at once, so the timed part of a run is qualification alone."""

    def scan(self, archive, identity, on_progress):
        return Outcome(Status.PASS, [], ScanReport(identity=identity, bundle_id="b", ops=[]))

    def build(self, archive, identity, on_progress):
        return Outcome(Status.N_A, ["nothing to build"],
                       BuildRecord(bundle_identity=identity, arch="cpu", toolchain={}, status=Status.N_A, kernels=[]))

    def admit(self, archive, identity, built, on_progress, *, on_start):
        on_start("")
        report = VerifyReport(bundle_id="b", identity=identity, seed=1, device="cpu", arch="cpu", sandboxed=True, rows=[])
        return Outcome(Status.PASS, [], Admitted(verify=report, device="cpu"))


@pytest.fixture
def stand_in(monkeypatch):
    """Every in-process qualification server runs a PASS that takes STAND_IN_S seconds; returns the runs' log."""
    runs: list[tuple[float, float]] = []

    def qualify_bundle(bundle, options, progress):
        start = time.monotonic()
        time.sleep(STAND_IN_S)
        runs.append((start, time.monotonic()))
        evidence = Evidence(bundle_identity=bundle.identity, engine=EngineSpec(preset="tiny", dtype="fp32", device="cpu"),
                            engine_identity="e" * 64, workload=make_workload("tiny", 512, seed=next(SEEDS)),
                            rule=RuleConfig(), sandboxed=True, frames=[], started="2026-01-01T00:00:00+00:00",
                            seconds=STAND_IN_S, decision=Decision(status="PASS", reason="stand-in", score=0.05, gate="PASS"))
        return QualifyResult(status="PASS", score=0.05, reason="stand-in PASS", evidence=evidence)

    monkeypatch.setattr(local, "qualify_bundle", qualify_bundle)
    return runs


@pytest.fixture
def qualifiers(sockdir, token):
    """start(n) -> n running qualification services on their own sockets."""
    running = []

    def start(n):
        new = [start_service("qualification", str(sockdir / f"q{len(running) + i}.sock"), token=token, concurrency=1)
               for i in range(n)]
        running.extend(new)
        return new

    yield start
    for r in running:
        r.stop(0)


def _admitted(db, make_bundle, n) -> Ledger:
    led = Ledger(db)
    for i in range(n):
        name = f"{db.stem}{i}"
        led.receive(pack(load_bundle(make_bundle(name=name))), source=name)
    Pipeline(led, Admitting(), through=State.ADMITTED, workers=2, backoff_s=0).run()
    assert led.counts()["admitted"] == n
    return led


def _score(led, sockdir, token, targets, **kwargs) -> tuple[float, list[str]]:
    """Runs the queue through scored against `targets`; returns the seconds it took and every progress message."""
    notes: list[str] = []
    clients = StageClients(str(sockdir / "no-compiler.sock"), str(sockdir / "no-admission.sock"), targets, token=token)
    start = time.monotonic()
    try:
        Pipeline(led, clients, through=State.SCORED, backoff_s=0, on_progress=lambda sid, stage, msg: notes.append(msg),
                 **kwargs).run()
    finally:
        clients.close()
    return time.monotonic() - start, notes


def _endpoints(led, sid) -> tuple[str | None, str | None]:
    first = led.evidence(sid, State.QUALIFIED, StageEvidence[Qualified]).record.endpoint
    return first, led.evidence(sid, State.SCORED, ScoreEvidence).record.endpoint


def _recorded_once(led, sid) -> None:
    states = [t.to_state for t in led.transitions(sid)]
    assert states == [State.RECEIVED, State.SCANNED, State.BUILT, State.ADMITTED, State.QUALIFIED, State.SCORED]


def test_three_endpoints_finish_a_queue_faster_than_one(stand_in, qualifiers, make_bundle, sockdir, token, tmp_path):
    """Six submissions, twelve qualifications, the same three pipeline workers: one endpoint runs them one after
    another; three run three at once, each reproduction on another endpoint than its first run."""
    one, three = qualifiers(1), qualifiers(3)
    slow_led, fast_led = _admitted(tmp_path / "one.db", make_bundle, 6), _admitted(tmp_path / "three.db", make_bundle, 6)
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


def test_a_run_whose_endpoint_dies_is_retried_on_another_and_recorded_once(stand_in, qualifiers, make_bundle, sockdir,
                                                                         token, tmp_path):
    """One endpoint's server stops while its qualification runs: that try is counted as infrastructure, the run
    is done again elsewhere, every submission is scored once with both runs on distinct live endpoints."""
    running = qualifiers(3)
    dead = running[0]
    led = _admitted(tmp_path / "l.db", make_bundle, 4)
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


def test_a_killed_endpoint_costs_one_try_and_tries_wait_for_an_endpoint(stand_in, qualifiers, make_bundle, sockdir,
                                                                       token, tmp_path):
    """Three submissions on two endpoints, one of them killed before the run: the one call it got fails and marks it
    down, no other submission is sent there during the cool-off, and at no time is a try recorded for more calls
    than there are live endpoints (a call waiting for an endpoint is no try)."""
    live, dead = qualifiers(2)
    dead.stop(0)
    led = _admitted(tmp_path / "l.db", make_bundle, 3)
    most, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            open_tries = sum(a.outcome is None for s in led.submissions() for a in led.attempts(s.id))
            most[0] = max(most[0], open_tries)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        clients = StageClients(str(sockdir / "no-compiler.sock"), str(sockdir / "no-admission.sock"),
                               [dead.target, live.target], token=token, cool_off_s=60)
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
