"""Rank hellos are untrusted: schema-checked and bounded; the burst goes down then up with secret shapes; the slot
sums over ranks."""

import random

import pytest
import torch
from pydantic import ValidationError

from hotfloat.bundle import load_bundle
from hotfloat.collective import RankReport, burst
from hotfloat.slots import Role, get_slot

from ..conftest import EXAMPLES

GOOD = {
    "rank": 0,
    "world": 2,
    "op": "collective.all_reduce:default",
    "identity": "ab",
    "backend": "gloo",
    "group_size": 2,
}


def test_rank_report_refuses_extra_keys_and_oversized_fields():
    RankReport.model_validate(GOOD)
    with pytest.raises(ValidationError):
        RankReport.model_validate({**GOOD, "verdict": "PASS"})
    with pytest.raises(ValidationError):
        RankReport.model_validate({**GOOD, "op": "x" * 10_000})


def test_burst_descends_then_ascends_per_dtype_with_secret_counts_a_drawn_shape_and_the_corners():
    op = load_bundle(EXAMPLES / "allreduce_torch").ops[0]
    cases = burst(op, ["fp16", "fp32"], "cpu", random.Random(1))
    slot = get_slot("collective.all_reduce")
    public = {(s.dims["T"], s.dims["H"]) for s in slot.shapes}
    shapes = len([s for s in slot.shapes if s.cpu]) + 3  # the published cpu shapes, one drawn, two corners
    per = 2 * shapes - 1
    sizes = [c["T"] * c["H"] for c in cases[:per]]
    assert sizes == sorted(sizes[:shapes], reverse=True) + sorted(sizes[:shapes])[1:]
    assert [c["dtype"] for c in cases] == ["fp16"] * per + ["fp32"] * per
    assert {c["H"] for c in cases} - {h for _, h in public}, "one hidden size is drawn, not published"
    h = slot.ranges["H"]
    assert any(c["H"] > h.hi // 2 and c["H"] // h.multiple % 2 for c in cases), "the top corner: odd step, top octave"
    assert any(c["H"] <= 2 * h.lo and c["T"] > 1 for c in cases), "the bottom corner: small hidden size, many tokens"
    assert burst(op, ["fp16"], "cpu", random.Random(2)) != cases[:per]


def test_slot_reference_is_the_fp32_sum_over_ranks():
    slot = get_slot("collective.all_reduce")
    assert slot.world_size == 2 and slot.of_role(Role.GROUP)
    xs = torch.randn(3, 4, 5).to(torch.bfloat16)
    assert torch.equal(slot.reference({"x": xs})["out"], xs.float().sum(0))
