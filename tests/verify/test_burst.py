"""Bursts: calls of distinct cases grouped by the secret, gaps mostly zero, and replies split back per call."""

from __future__ import annotations

import random

from hotfloat.slots import get_slot
from hotfloat.verify import burst, wire
from hotfloat.verify.inputs import prepare
from hotfloat.verify.plan import Case, schedule

SILU = get_slot("activation.silu_and_mul")
CASES = [Case(i, "fp32", {"T": 4, "D": 16}, (4, 3, 2), (0, 8, 0)) for i in range(4)]


def test_bursts_hold_distinct_cases_in_the_schedule_order_and_vary_in_size():
    calls = schedule(CASES, 3, random.Random(1))
    groups = burst.group(calls, random.Random(2), tensors_per_call=2)
    assert [c for g in groups for c in g] == calls
    assert all(len({c.case.index for c in g}) == len(g) for g in groups)
    assert {len(g) for g in groups} >= {1, 2}
    assert max(len(g) for g in burst.group(calls, random.Random(2), tensors_per_call=wire.MAX_TENSORS)) == 1


def test_spacing_is_drawn_and_includes_back_to_back():
    rng = random.Random(3)
    gaps = [burst.gap(rng, 0.02) for _ in range(200)]
    settles = [burst.settle(rng, 0.02) for _ in range(200)]
    assert 0.0 in gaps and max(gaps) > 0.01 and len(set(gaps)) > 50
    assert 0.0 in settles and min(s for s in settles if s) >= 0.01 and max(settles) <= 0.03


def test_request_and_split_keep_each_calls_tensors_apart():
    preps = [prepare(SILU, c, 0, 10 + c.index) for c in CASES[:2]]
    meta, tensors = burst.request(preps, [0.0], 0.01)
    assert [c["prefix"] for c in meta["calls"]] == ["k0_", "k1_"] and meta["gaps"] == [0.0]
    assert [h.name for h, _ in tensors] == ["k0_x", "k0_out", "k1_x", "k1_out"]
    outs = [(h, d) for h, d in tensors if h.name.endswith("_out")]
    reply = wire.Frame("result", {"calls": [{"returned": None}, {"raised": "ValueError: no"}]}, tuple(outs))
    first, second = burst.split(reply, 2)
    assert first.kind == "result" and [h.name for h, _ in first.tensors] == ["out"]
    assert second.kind == "raised" and second.meta == {"error": "ValueError: no"}
    forged = wire.Frame("result", {"calls": [{}], "verdict": "PASS"}, ())
    assert burst.split(forged, 2) == [forged, forged], "a malformed burst reply is judged for every call"
