"""When the gate's twin runs (hotfloat.qualify.twin): beside C where four engines fit, else before C for every set
of slots C could route, else after C."""

from hotfloat.qualify.twin import FIRST_MOST, subsets, twin_mode


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
