"""Faults: a worker killed mid-verification costs one try and its submission waits for a worker (never FAIL, never
lost), and a validator killed mid-pipeline resumes where it was without redoing committed stages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from hotfloat.bundle import load_bundle, pack
from hotfloat.ledger import Ledger, State
from hotfloat.validator import Pipeline
from hotfloat_services.common.process import ServiceProcess
from hotfloat_services.validator.clients import StageClients
from hotfloat.admission.scope import QUICK_ADMISSION

GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""


def _worker(sockdir, token_file):
    return ServiceProcess(
        "admission",
        sockdir / "admission.sock",
        token_file,
        extra=QUICK_ADMISSION.flags(),
        log=sockdir / "admission.log",
    )


def _killer(worker, then=None):
    """A progress hook that kills the admission worker (and its sandboxed children) once verification runs."""
    fired = []

    def on_progress(sid, stage, message):
        if stage == "admit" and not fired:
            fired.append(message)
            worker.kill()
            if then:
                then()

    return on_progress, fired


def test_a_killed_worker_costs_one_try_and_the_submission_waits_unjudged_until_one_serves(
    services, token, token_file, sockdir, make_bundle, tmp_path
):
    """The only admission worker dies mid-verification and stays dead: its try is one retry, the endpoint is down,
    and the submission waits at BUILT without spending its other tries (health checks fail every cool-off); once a
    worker serves again it is admitted."""
    compiler = services("compiler")["compiler"]
    with _worker(sockdir, token_file) as worker, Ledger(tmp_path / "l.db") as led:
        sid = led.receive(pack(load_bundle(make_bundle(GOOD))))[0].id
        on_progress, fired = _killer(worker)
        clients = StageClients(compiler, worker.target, None, token=token, cool_off_s=0.3)
        run = threading.Thread(
            target=Pipeline(led, clients, max_attempts=2, backoff_s=0.1, on_progress=on_progress).run
        )
        run.start()
        deadline = time.monotonic() + 300
        while not any(a.outcome == "retry" for a in led.attempts(sid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # ten cool-offs, each ending in a failed health check
        attempts = [(a.stage, a.outcome) for a in led.attempts(sid) if a.stage == "admit"]
        assert fired and attempts == [("admit", "retry")] and led.get(sid).state is State.BUILT, attempts
        worker.start()
        run.join(300)
        clients.close()
        assert led.get(sid).state is State.ADMITTED
        assert [a.outcome for a in led.attempts(sid) if a.stage == "admit"] == ["retry", "done"]


def test_worker_killed_mid_verification_is_retried_after_restart(
    services, token, token_file, sockdir, make_bundle, tmp_path
):
    compiler = services("compiler")["compiler"]
    with _worker(sockdir, token_file) as worker, Ledger(tmp_path / "l.db") as led:
        sid = led.receive(pack(load_bundle(make_bundle(GOOD))))[0].id
        on_progress, fired = _killer(worker, then=worker.start)
        clients = StageClients(compiler, worker.target, None, token=token, cool_off_s=0.3)
        Pipeline(led, clients, max_attempts=3, backoff_s=0.1, on_progress=on_progress).run()
        clients.close()
        assert fired and led.get(sid).state is State.ADMITTED
        assert [a.outcome for a in led.attempts(sid) if a.stage == "admit"] == ["retry", "done"]


def test_validator_killed_mid_pipeline_resumes(services, token_file, make_bundle, tmp_path):
    targets = services("compiler", "admission")
    db = tmp_path / "l.db"
    with Ledger(db) as led:
        sids = [led.receive(pack(load_bundle(make_bundle(GOOD))))[0].id]
    cmd = [
        sys.executable,
        "-c",
        "from hotfloat.cli.main import main; main()",
        "validator",
        "run",
        "--ledger",
        str(db),
        "--compiler",
        targets["compiler"],
        "--admission",
        targets["admission"],
        "--token-file",
        str(token_file),
        "--max-attempts",
        "3",
    ]
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with Ledger(db) as led:
            deadline = time.monotonic() + 120
            while not any(a.stage == "admit" and a.outcome is None for s in sids for a in led.attempts(s)):
                assert time.monotonic() < deadline and first.poll() is None, "the validator never reached admission"
                time.sleep(0.1)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    second = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    with Ledger(db) as led:
        for sid in sids:
            assert led.get(sid).state is State.ADMITTED
            states = [t.to_state for t in led.transitions(sid)]
            assert states == [State.RECEIVED, State.SCANNED, State.BUILT, State.ADMITTED]
            outcomes = [(a.stage, a.outcome) for a in led.attempts(sid)]
            assert outcomes.count(("scan", "done")) == 1 and outcomes.count(("build", "done")) == 1
            assert ("admit", "done") in outcomes
        interrupted = [a for s in sids for a in led.attempts(s) if a.outcome == "interrupted"]
        assert interrupted and all(a.stage == "admit" for a in interrupted)
