"""Rank reports are untrusted: schema-checked and bounded; the burst goes down then up; the slot sums over ranks."""

import pytest
import torch
from pydantic import ValidationError

from hotfloat.bundle import load_bundle
from hotfloat.collective import RankReport, burst
from hotfloat.slots import Role, get_slot

from ..conftest import EXAMPLES

GOOD = {"rank": 0, "world": 2, "op": "collective.all_reduce:default", "identity": "ab", "backend": "gloo",
        "group_size": 2, "cases_done": 3, "error": None}


def test_rank_report_refuses_extra_keys_and_oversized_fields():
    RankReport.model_validate(GOOD)
    with pytest.raises(ValidationError):
        RankReport.model_validate({**GOOD, "verdict": "PASS"})
    with pytest.raises(ValidationError):
        RankReport.model_validate({**GOOD, "error": "x" * 10_000})


def test_burst_descends_then_ascends_per_dtype():
    op = load_bundle(EXAMPLES / "allreduce_torch").ops[0]
    cases = burst(op, ["fp16", "fp32"], "cpu")
    sizes = [c["T"] * c["H"] for c in cases[:7]]
    assert sizes == sorted(sizes[:4], reverse=True) + sorted(sizes[:4])[1:]
    assert [c["dtype"] for c in cases] == ["fp16"] * 7 + ["fp32"] * 7


def test_slot_reference_is_the_fp32_sum_over_ranks():
    slot = get_slot("collective.all_reduce")
    assert slot.world_size == 2 and slot.of_role(Role.GROUP)
    xs = torch.randn(3, 4, 5).to(torch.bfloat16)
    assert torch.equal(slot.reference({"x": xs})["out"], xs.float().sum(0))
