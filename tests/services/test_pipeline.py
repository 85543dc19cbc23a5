"""The validator pipeline over real in-process servers: verdicts move submissions, each change recorded once."""

from __future__ import annotations

import threading
import time

import pytest

from hotfloat.bundle import load_bundle, pack
from hotfloat.ledger import Ledger, State
from hotfloat.validator import Admitted, Pipeline, StageEvidence
from hotfloat_services.validator.clients import StageClients

GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""
BANNED = "import subprocess\n\ndef run(x, out):\n    out.zero_()\n"
AOT_ONLY = """\
bundle_id = "gpu-only"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
architectures = ["sm_90"]
"""


def _submit(led, make_bundle, **bundles):
    return {
        name: led.receive(pack(load_bundle(make_bundle(name=name, **kw))), source=name)[0].id
        for name, kw in bundles.items()
    }


def test_submissions_reach_their_verdicts(services, token, make_bundle, tmp_path):
    targets = services("compiler", "admission")
    clients = StageClients(targets["compiler"], targets["admission"], None, token=token)
    events = []
    with Ledger(tmp_path / "l.db") as led:
        ids = _submit(
            led,
            make_bundle,
            good={"kernel": GOOD},
            wrong={},
            banned={"kernel": BANNED},
            gpuonly={"kernel": GOOD, "manifest": AOT_ONLY},
        )
        pipeline = Pipeline(led, clients, through=State.ADMITTED, on_event=lambda *e: events.append(e))
        counts = pipeline.run()
        subs = {name: led.get(sid) for name, sid in ids.items()}
        assert subs["good"].state is State.ADMITTED
        assert [t.to_state for t in led.transitions(ids["good"])] == [
            State.RECEIVED,
            State.SCANNED,
            State.BUILT,
            State.ADMITTED,
        ]
        assert subs["wrong"].state is State.FAILED and subs["wrong"].reason.startswith("admit: activation.silu_and_mul")
        assert subs["banned"].state is State.FAILED and "subprocess" in subs["banned"].reason
        assert [t.to_state for t in led.transitions(ids["banned"])] == [State.RECEIVED, State.FAILED]
        assert (
            subs["gpuonly"].state is State.NO_DECISION
            and "no op of the bundle applies on cpu" in subs["gpuonly"].reason
        )
        assert led.evidence(ids["good"], State.ADMITTED, StageEvidence[Admitted]).record.verify.rows
        assert counts["admitted"] == 1 and counts["failed"] == 2 and counts["no_decision"] == 1
        # a second run finds nothing to do and changes nothing
        before = {sid: led.transitions(sid) for sid in ids.values()}
        Pipeline(led, clients, through=State.ADMITTED).run()
        assert {sid: led.transitions(sid) for sid in ids.values()} == before
        # a "qualification" address that does not offer the stage is a deployment fault: the run stops, nothing judged
        wrong = StageClients(targets["compiler"], targets["admission"], targets["compiler"], token=token)
        with pytest.raises(Exception, match="refused the validator: Method not found"):
            Pipeline(led, wrong, through=State.QUALIFIED).run()
        wrong.close()
        assert led.get(ids["good"]).state is State.ADMITTED and led.transitions(ids["good"]) == before[ids["good"]]
    clients.close()
    assert any(stage == "admit" and msg == "PASS -> admitted" for _, stage, msg in events)


def test_a_refused_token_stops_the_run_without_judging(services, make_bundle, tmp_path):
    targets = services("compiler", "admission")
    clients = StageClients(targets["compiler"], targets["admission"], None, token="wrong-token-wrong-token")
    with Ledger(tmp_path / "l.db") as led:
        sid = _submit(led, make_bundle, good={"kernel": GOOD})["good"]
        with pytest.raises(Exception, match="refused the validator"):
            Pipeline(led, clients).run()
        assert led.get(sid).state is State.RECEIVED
    clients.close()


def test_follow_mode_picks_up_new_submissions_until_stopped(services, token, make_bundle, tmp_path):
    targets = services("compiler", "admission")
    clients = StageClients(targets["compiler"], targets["admission"], None, token=token)
    stop = threading.Event()
    with Ledger(tmp_path / "l.db") as led:
        runner = threading.Thread(
            target=Pipeline(led, clients).run, kwargs={"drain": False, "poll_s": 0.1, "stop": stop}
        )
        runner.start()
        try:
            time.sleep(0.5)
            assert runner.is_alive(), "an empty queue must not end a follow run"
            sid = _submit(led, make_bundle, banned={"kernel": BANNED})["banned"]
            deadline = time.monotonic() + 60
            while led.get(sid).state is not State.FAILED:
                assert time.monotonic() < deadline, "the follow run never picked up the new submission"
                time.sleep(0.1)
        finally:
            stop.set()
            runner.join(30)
        assert not runner.is_alive()
    clients.close()
