"""The resident-engine protocol against hostile candidates on the CPU engine: whoever causes a fault owns it.

A candidate that kills its own engine, stalls, closes its channel, stops itself or forges a frame is at fault: FAIL
with the evidence of what it did, never NO_DECISION (a free re-roll) and never an internal error. The hostile code
runs where a real attacker's would: inside the candidate's engine process (qualification does not scan; the scan is
a separate stage with its own tests).
"""

import time

import pytest

from hotfloat.qualify import QualifyOptions, qualify_bundle, recompute
from hotfloat.qualify.protocol import FIRST_MOST, round_order, subsets, twin_mode

OPTS = QualifyOptions.for_device(
    "cpu", seed=5, warmup_passes=0, twin=False, stall_floor_s=4.0, rule={"look_rounds": 3, "max_looks": 1}
)

KERNEL = """
import os, signal, sys, threading, time
import torch

calls = [0]


def run(x, out):
    calls[0] += 1
    if calls[0] > {after}:
        {act}
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""
TAMPER = """
import torch
import hotfloat.engine.wire as wire

_send = wire.send


def send(sock, msg):
    if msg.get("type") == "done":
        {change}
    _send(sock, msg)


wire.send = send


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


def _qualify(make_bundle, source, name, opts=OPTS):
    t = time.monotonic()
    r = qualify_bundle(make_bundle(source, name=name), opts)
    assert recompute(r.evidence) == r.evidence.decision
    return r, time.monotonic() - t


@pytest.mark.parametrize(
    "act,fault",
    [
        ("os.kill(os.getpid(), signal.SIGKILL)", "died"),
        ("os.close(0)", "died"),
        ("time.sleep(3600)", "stalled"),
        ("threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGSTOP)).start()", ("stalled", "isolation")),
    ],
    ids=["self-kill", "closes-channel", "stalls", "stops-itself"],
)
def test_a_candidate_that_breaks_its_own_engine_fails_with_evidence(make_bundle, act, fault):
    r, took = _qualify(make_bundle, KERNEL.format(after=40, act=act), "breaker")
    c = r.evidence.frames[1]
    assert r.status == "FAIL" and r.score == 0, r.reason
    assert not c.ok and c.fault in ((fault,) if isinstance(fault, str) else fault), (c.fault, c.error)
    assert r.evidence.decision.fault == f"C:{c.fault}" and r.evidence.frames[0].ok and r.evidence.frames[2].ok
    assert took < 120, f"a stalling candidate held the host for {took:.0f} s"


def test_a_stall_is_measured_against_the_baselines_not_a_fixed_five_minutes(make_bundle):
    r, took = _qualify(make_bundle, KERNEL.format(after=40, act="time.sleep(3600)"), "staller")
    assert "stalled" in r.reason and "slowest baseline pass" in r.reason, r.reason
    assert took < 60


@pytest.mark.parametrize(
    "change,why",
    [
        ('msg = {**msg, "logprobs": [10 ** 400] * len(msg["logprobs"])}', "not bounded JSON"),
        ('msg = {**msg, "logprobs": [1] * len(msg["logprobs"])}', "malformed 'done'"),
        ('msg = {**msg, "tokens": [float(t) for t in msg["tokens"]]}', "malformed 'done'"),
        ('msg = {**msg, "also": "granted"}', "malformed 'done'"),
        ('msg = {**msg, "tokens": msg["tokens"] + [1]}', "malformed completion"),
        ('msg = {**msg, "pad": "x" * (5 << 20)}', "exceeds"),
        ('msg = {**msg, "type": "ready"}', "was due"),
    ],
    ids=["401-digit-logprob", "int-logprob", "float-tokens", "extra-key", "long-completion", "oversize", "wrong-type"],
)
def test_a_forged_frame_is_the_candidates_fault_never_an_internal_error(make_bundle, change, why):
    r, _ = _qualify(make_bundle, TAMPER.format(change=change), "forger")
    c = r.evidence.frames[1]
    assert r.status == "FAIL" and c.fault == "protocol" and why in c.error, (r.reason, c.error)


def test_the_twin_runs_beside_before_or_after_the_candidate_by_the_plan_and_the_declared_slots():
    three = {"activation.silu_and_mul", "norm.rmsnorm", "attention.decode"}
    assert twin_mode(False, True, three) == "none"
    assert twin_mode(True, False, three) == "resident"
    assert len(three) <= FIRST_MOST and twin_mode(True, True, three) == "first"
    assert twin_mode(True, True, three | {"moe.fused_experts"}) == "after"


def test_every_set_the_candidate_could_route_is_served_once_sorted_the_empty_one_included():
    got = subsets({"norm.rmsnorm", "activation.silu_and_mul"})
    assert got == [
        (),
        ("activation.silu_and_mul",),
        ("norm.rmsnorm",),
        ("activation.silu_and_mul", "norm.rmsnorm"),
    ]
    assert len(subsets({"a", "b", "c"})) == 8 and len(set(subsets({"a", "b", "c"}))) == 8


def test_round_order_is_drawn_from_the_seed():
    orders = {tuple(round_order(5, r)) for r in range(40)}
    assert len(orders) == 6 and round_order(5, 7) == round_order(5, 7)  # every permutation of B, C, B' occurs
    assert [round_order(5, r) for r in range(10)] != [round_order(6, r) for r in range(10)]


def test_a_candidate_that_claims_calls_of_slots_it_never_declared_is_at_fault(make_bundle):
    """Forged seam counts cannot make the twin perturb more (nor fault the twin into a NO_DECISION)."""
    forge = TAMPER.replace(
        '    if msg.get("type") == "done":\n        {change}\n',
        """    if msg.get("type") == "counts":
        msg = {**msg, "routed": {**msg["routed"], "norm.rmsnorm": 7}}
""",
    )
    r, _ = _qualify(make_bundle, forge, "counter", OPTS.model_copy(update={"twin": True}))
    c = r.evidence.frames[1]
    assert r.status == "FAIL" and c.fault == "protocol" and "does not declare" in c.error, (r.reason, c.error)
