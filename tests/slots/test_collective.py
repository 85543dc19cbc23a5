"""What a collective's reference sees (`stack_ranks`): each rank's own inputs stacked in rank order, the replicated
ones and the scalars once; and collective.all_reduce's tolerance follows its addends, not the sum."""

import torch

from hotfloat.slots import get_slot
from hotfloat.slots.collective import stack_ranks


def test_own_inputs_are_stacked_in_rank_order_and_replicated_ones_passed_once():
    slot = get_slot("collective.ar_residual_rmsnorm")
    group = object()
    ranks = [
        {"x": torch.full((2, 3), float(r)), "residual": torch.full((2, 3), 10.0 + r), "eps": 1e-5, "group": group}
        for r in range(3)
    ]
    got = stack_ranks(slot, ranks)
    assert got["x"].shape == (3, 2, 3) and [float(got["x"][r, 0, 0]) for r in range(3)] == [0.0, 1.0, 2.0]
    assert got["residual"] is ranks[0]["residual"] and got["eps"] == 1e-5 and got["group"] is group


def test_all_reduce_tolerance_scales_with_the_summed_magnitudes():
    slot = get_slot("collective.all_reduce")
    ranked = stack_ranks(slot, [{"x": torch.tensor([[1000.0, -2.0]])}, {"x": torch.tensor([[-999.0, 2.0]])}])
    expected = slot.reference(ranked)
    assert expected["out"].tolist() == [[1.0, 0.0]]
    assert slot.rounding_scale(ranked, expected)["out"].tolist() == [[1999.0, 4.0]]
