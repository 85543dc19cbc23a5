"""The trusted side of resident engines: a candidate engine that lies about its identity, sends malformed frames or
NaN logprobs FAILs (its own doing); a baseline engine that faults is infrastructure (NO_DECISION); the validator
process is non-dumpable; CPU sets are disjoint; an idle candidate is stopped while another engine is timed. The
hostile candidates patch the worker's channel from inside the
engine process, where a real attacker's code runs."""

import time

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.qualify import QualifyOptions, qualify_bundle
from hotfloat.qualify.host import staged
from hotfloat.engine import hostload
from hotfloat.qualify.isolation import Isolation
from hotfloat.qualify.isolation.resident import EngineFault, ResidentEngine, cpu_sets, is_dumpable

OPTS = QualifyOptions.for_device("cpu", seed=3, warmup_passes=0, rule={"look_rounds": 3, "max_looks": 1})

TAMPER = """
import torch
import hotfloat.engine.wire as wire

_send = wire.send


def send(sock, msg):
    {change}
    _send(sock, msg)


wire.send = send


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""
LIES = 'msg = {**msg, "identity": "f" * 64} if msg.get("type") == "ready" else msg'
NAN = 'msg = {**msg, "logprobs": [float("nan")] * len(msg["logprobs"])} if msg.get("type") == "done" else msg'
MALFORMED = 'msg = {**msg, "tokens": "abc"} if msg.get("type") == "done" else msg'


@pytest.mark.parametrize("change,why", [(LIES, "identity"), (NAN, "non-finite")], ids=["identity", "nan"])
def test_a_lying_candidate_engine_fails(make_bundle, change, why):
    r = qualify_bundle(make_bundle(TAMPER.format(change=change), name="liar"), OPTS)
    assert r.status == "FAIL" and r.score == 0 and why in r.reason, r.reason
    assert r.evidence.frames[0].ok and r.evidence.frames[2].ok
    assert not is_dumpable(), "the validator process must be non-dumpable once it ran engines"


def test_a_malformed_completion_is_the_engines_own_fault(make_bundle):
    b = load_bundle(make_bundle(TAMPER.format(change=MALFORMED), name="malformed"))
    with staged({"c": b}, sandboxed=True) as paths:
        spec = dict(
            OPTS.engine().model_dump(),
            bundle=paths["c"],
            identity=b.identity,
            warmup=[],
            threads=1,
            extra_passes=0,
            cpus=None,
            graph_batches=[2],
            kv_tokens=0,
            mem_fraction=0.2,
        )
        engine = ResidentEngine("C", spec, device="cpu", kind="transformers", sandboxed=True, model_dir=None)
        try:
            engine.ready(time.monotonic() + 300)
            with pytest.raises(EngineFault, match="malformed .done. message") as e:
                engine.serve([[1, 2, 3], [4, 5]], [2, 2], 120)
            assert e.value.kind == "protocol"
        finally:
            engine.close()


def test_a_baseline_engine_that_faults_is_infrastructure(bundles):
    """The incumbent armed in B and B' raises: never the candidate's loss."""
    r = qualify_bundle(bundles["exact"], OPTS, baseline=bundles["raises"])
    assert r.status == "NO_DECISION" and r.reason.startswith("infrastructure") and "ZeroDivisionError" in r.reason


def test_cpu_sets_are_disjoint_and_leave_the_validator_a_cpu():
    sets = cpu_sets(3, list(range(16)))
    flat = [c for s in sets for c in s]
    assert len(flat) == len(set(flat)) == 15 and 0 not in flat and all(len(s) == 5 for s in sets)
    assert cpu_sets(3, [0, 1]) == [None, None, None]


SPIN = """
import subprocess
import sys

import torch

# a separate process burns the CPU, so the engine's own thread is not starved of the GIL while it boots
subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


def test_an_idle_candidate_is_stopped_while_another_engine_is_timed(make_bundle):
    """A candidate that burns a CPU whenever it is idle (in a process of its own: the tree walk stops children too; the
    same would hold for launching GPU work) gets no CPU time while the baseline serves inside `alone`, and runs again
    afterwards."""
    b = load_bundle(make_bundle(SPIN, name="spinner"))
    with staged({"c": b}, sandboxed=True) as paths:
        base = dict(
            OPTS.engine().model_dump(),
            warmup=[],
            threads=1,
            extra_passes=0,
            cpus=None,
            graph_batches=[2],
            kv_tokens=0,
            mem_fraction=0.2,
        )
        stock = ResidentEngine(
            "B",
            dict(base, bundle=None, identity=None),
            device="cpu",
            kind="transformers",
            sandboxed=True,
            model_dir=None,
        )
        spinner = ResidentEngine(
            "C",
            dict(base, bundle=paths["c"], identity=b.identity),
            device="cpu",
            kind="transformers",
            sandboxed=True,
            model_dir=None,
        )
        try:
            for e in (stock, spinner):
                e.ready(time.monotonic() + 300)
            with Isolation.start("cpu", required=True).alone([stock, spinner], stock):
                states = {hostload.state(pid) or "Z" for pid in hostload.tree(spinner.proc.pid)}
                before = hostload.tree_cpu_s(spinner.proc.pid)
                stock.serve([[1, 2, 3], [4, 5]], [2, 2], 120)
                time.sleep(0.5)
                during = hostload.tree_cpu_s(spinner.proc.pid) - before
            assert states <= {"T", "Z"}, states  # every process of the candidate stopped
            assert during < 0.02, during
            before = hostload.tree_cpu_s(spinner.proc.pid)
            time.sleep(0.5)
            assert hostload.tree_cpu_s(spinner.proc.pid) - before > 0.05  # resumed: it spins again
        finally:
            stock.close()
            spinner.close()
