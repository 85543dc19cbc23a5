"""Real servers for the service tests: in-process threads or separate processes, on short-lived Unix sockets."""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.compiler import BuildRecord
from hotfloat.ledger import Ledger, State
from hotfloat.qualify import Decision, EngineSpec, Evidence, QualifyResult, RuleConfig
from hotfloat.qualify.workload import make_workload
from hotfloat.qualify.calibration import Uncalibrated
from hotfloat.scan import ScanReport
from hotfloat.validator import Admitted, Outcome, Pipeline, local
from hotfloat.admission.scope import QUICK_ADMISSION
from hotfloat.verdict import Status
from hotfloat.verify import VerifyReport
from hotfloat_services.serve import start as start_service

TOKEN = "hotfloat-test-token-0123456789"
QUICK = QUICK_ADMISSION.stage_kwargs()
"""Admission in tests verifies one shape in one dtype: the protocol is verify's to test, the wiring is ours."""


@pytest.fixture
def sockdir():
    """A short directory for sockets (a Unix socket path must stay under ~100 bytes, pytest's tmp_path may not)."""
    d = Path(tempfile.mkdtemp(prefix="hf-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def token():
    """The deployment token the `services` fixture's servers require."""
    return TOKEN


@pytest.fixture
def token_file(sockdir):
    p = sockdir / "token"
    p.write_text(TOKEN)
    return p


@pytest.fixture
def services(sockdir):
    """start(*names) runs each service in this process on its own socket and returns {name: target}."""
    from hotfloat.validator import StageConfig
    from hotfloat_services.serve import start as start_service

    running = {}

    def start(*names, concurrency=2, **config):
        for name in names:
            running[name] = start_service(
                name,
                str(sockdir / f"{name}.sock"),
                token=TOKEN,
                concurrency=concurrency,
                config=StageConfig(**{**QUICK, **config}),
            )
        return {n: r.target for n, r in running.items()}

    yield start
    for r in running.values():
        r.stop(0)


@pytest.fixture
def packed(make_bundle):
    """pack_dir(path) -> (archive bytes, identity) for a bundle directory; default: a fresh torch bundle."""

    def pack_dir(path=None):
        bundle = load_bundle(path or make_bundle())
        return pack(bundle), bundle.identity

    return pack_dir


STAND_IN_S = 1.5
"""Wall time of one stand-in qualification."""
SEEDS = itertools.count(100)


class Admitting:
    """Scan, build and admission that pass at once, so the timed part of a run is qualification alone."""

    def scan(self, archive, identity, on_progress):
        return Outcome(Status.PASS, [], ScanReport(identity=identity, bundle_id="b", ops=[]))

    def build(self, archive, identity, on_progress):
        return Outcome(
            Status.N_A,
            ["nothing to build"],
            BuildRecord(bundle_identity=identity, arch="cpu", toolchain={}, status=Status.N_A, kernels=[]),
        )

    def admit(self, archive, identity, built, on_progress, *, on_start):
        on_start("")
        report = VerifyReport(
            bundle_id="b", identity=identity, seed=1, device="cpu", arch="cpu", sandboxed=True, rows=[]
        )
        return Outcome(Status.PASS, [], Admitted(verify=report, device="cpu"))


@pytest.fixture
def stand_in(monkeypatch):
    """Every in-process qualification server runs a PASS that takes STAND_IN_S seconds; returns the runs' log."""
    runs: list[tuple[float, float]] = []

    def qualify_bundle(bundle, options, progress):
        start = time.monotonic()
        time.sleep(STAND_IN_S)
        runs.append((start, time.monotonic()))
        evidence = Evidence(
            bundle_identity=bundle.identity,
            engine=EngineSpec(preset="tiny", dtype="fp32", device="cpu"),
            engine_identity="e" * 64,
            workload=make_workload("tiny", 512, seed=next(SEEDS)),
            rule=RuleConfig(),
            sandboxed=True,
            frames=[],
            started="2026-01-01T00:00:00+00:00",
            seconds=STAND_IN_S,
            decision=Decision(status="PASS", reason="stand-in", score=0.05, gate="PASS"),
            calibration=Uncalibrated(why="a stand-in run"),
        )
        return QualifyResult(status="PASS", score=0.05, reason="stand-in PASS", evidence=evidence)

    monkeypatch.setattr(local, "qualify_bundle", qualify_bundle)
    return runs


@pytest.fixture
def qualifiers(sockdir, token):
    """start(n) -> n running qualification services on their own sockets."""
    running = []

    def start(n):
        new = [
            start_service("qualification", str(sockdir / f"q{len(running) + i}.sock"), token=token, concurrency=1)
            for i in range(n)
        ]
        running.extend(new)
        return new

    yield start
    for r in running:
        r.stop(0)


def admitted(db, make_bundle, n) -> Ledger:
    """A ledger of `n` fresh submissions taken to ADMITTED by `Admitting`."""
    led = Ledger(db)
    for i in range(n):
        name = f"{db.stem}{i}"
        led.receive(pack(load_bundle(make_bundle(name=name))), source=name)
    Pipeline(led, Admitting(), through=State.ADMITTED, workers=2, backoff_s=0).run()
    assert led.counts()["admitted"] == n
    return led
