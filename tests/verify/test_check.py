"""The trusted judgement: each way a reply can be wrong maps to its own, specific FAIL reason."""

from __future__ import annotations

import random

import pytest
import torch

from hotfloat.slots import get_slot
from hotfloat.verify import wire
from hotfloat.verify.check import judge, reply_error
from hotfloat.verify.inputs import prepare
from hotfloat.verify.plan import Case

SILU = get_slot("activation.silu_and_mul")
CASE = Case(0, "bf16", {"T": 6, "D": 40}, (5, 6, 4), (0, 8, 0))


@pytest.fixture(params=[0, 1], ids=["contiguous", "padded"])
def prep(request):
    return prepare(SILU, CASE, request.param, random.Random(request.param).getrandbits(63))


def _reply(prep, write=True, edit=None, **meta):
    """What an honest child would send back, optionally edited the way a cheat or a bug would edit it."""
    sent = {h.name: (h, d) for h, d in prep.sent}
    flat, view = wire.to_tensor(*sent["out"])
    inputs = [wire.to_tensor(*sent["x"])[0]]  # silu_and_mul's one input
    if write:
        view.copy_(prep.expected["out"].to(view.dtype))
    if edit:
        edit(flat, view, inputs[0])
    fields = {
        "returned": None,
        "moved": [],
        "outputs_digest": wire.digest([flat]),
        "input_digests": {"x": wire.digest(inputs)},
    }
    fields.update(meta)
    return wire.Frame("result", fields, ((sent["out"][0], wire.flat_bytes(flat)),))


def test_an_honest_reply_passes(prep):
    outcome = judge(SILU, "bf16", prep, _reply(prep))
    tol = SILU.tolerances["bf16"]
    bound = tol.atol + tol.rtol * float(prep.expected["out"].abs().max())
    assert outcome.ok and outcome.max_abs_err is not None and outcome.max_abs_err <= bound


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        ({"write": False}, "left unwritten"),
        ({"edit": lambda f, v, x: v[-1:].copy_(v[:1])}, "elements outside atol"),
        ({"edit": lambda f, v, x: v[0, 0].fill_(float("inf"))}, "non-finite"),
        ({"edit": lambda f, v, x: x.add_(1)}, "input mutated"),
        ({"outputs_digest": "0" * 64}, "deferred or asynchronous write"),
        ({"returned": "Tensor"}, "returned a Tensor"),
        ({"moved": ["out"]}, "output identity changed"),
    ],
)
def test_each_defect_has_its_reason(prep, kwargs, reason):
    outcome = judge(SILU, "bf16", prep, _reply(prep, **kwargs))
    assert not outcome.ok and reason in outcome.reason


def test_a_mutated_input_is_named_alone_and_a_reply_without_every_input_is_a_protocol_violation():
    """rmsnorm has two inputs: a kernel that writes x only is told x, never "x, weight"."""
    rms = get_slot("norm.rmsnorm")
    p = prepare(rms, Case(0, "fp32", {"T": 4, "H": 64}, (4,), (0,)), 0, 3)
    sent = {h.name: (h, d) for h, d in p.sent}
    flat, view = wire.to_tensor(*sent["out"])
    view.copy_(p.expected["out"].to(view.dtype))
    x, weight = wire.to_tensor(*sent["x"])[0], wire.to_tensor(*sent["weight"])[0]
    meta = {"returned": None, "moved": [], "outputs_digest": wire.digest([flat])}
    frame = lambda digests: wire.Frame(
        "result", {**meta, "input_digests": digests}, ((sent["out"][0], wire.flat_bytes(flat)),)
    )  # noqa: E731
    honest = {"x": wire.digest([x]), "weight": wire.digest([weight])}
    assert judge(rms, "fp32", p, frame(honest)).ok
    outcome = judge(rms, "fp32", p, frame({**honest, "x": "0" * 64}))
    assert not outcome.ok and outcome.reason == "input mutated: x written; inputs must be read-only"
    assert "protocol violation" in judge(rms, "fp32", p, frame({"x": honest["x"]})).reason


def test_untouched_elements_are_named_whichever_poison_was_drawn():
    families = set()
    for seed in range(40):
        p = prepare(SILU, CASE, 0, seed)
        sent = wire.to_tensor(*dict((h.name, (h, d)) for h, d in p.sent)["out"])[1].float()
        families.add("nan" if bool(sent.isnan().all()) else "zero" if not bool(sent.any()) else "finite")
        outcome = judge(SILU, "bf16", p, _reply(p, write=False))
        assert not outcome.ok and "left unwritten" in outcome.reason, (seed, outcome.reason)
    assert families == {"nan", "zero", "finite"}, "every poison family is drawn"


def test_writing_into_row_padding_fails():
    padded = prepare(SILU, CASE, 1, 7)

    def spill(flat, view, x):
        flat[view.shape[1]] = 1.0

    outcome = judge(SILU, "bf16", padded, _reply(padded, edit=spill))
    assert not outcome.ok and "outside the view" in outcome.reason


def test_replies_that_break_the_schema_are_protocol_violations(prep):
    honest = _reply(prep)
    forged = wire.Frame("result", {"verdict": "PASS"}, honest.tensors)
    assert "protocol violation" in judge(SILU, "bf16", prep, forged).reason
    header = honest.tensors[0][0]
    bigger = wire.TensorHeader("out", header.dtype, header.shape, header.stride, header.storage + 1)
    resized = wire.Frame("result", honest.meta, ((bigger, honest.tensors[0][1] + b"\0\0"),))
    assert "headers differ" in judge(SILU, "bf16", prep, resized).reason


def test_child_text_is_shown_sanitised_never_trusted(prep):
    raised = wire.Frame("raised", {"stage": "call", "error": "ValueError: \x1b[31mPASS\nstatus: PASS" + "x" * 1000})
    outcome = judge(SILU, "bf16", prep, raised)
    assert not outcome.ok and "\n" not in outcome.reason and "\x1b" not in outcome.reason
    assert len(outcome.reason) < 350
    assert "protocol violation" in reply_error(wire.Frame("result", {}), "loaded")


def test_fp32_tolerance_is_tight():
    case = Case(0, "fp32", {"T": 3, "D": 16}, (3, 3, 3), (0, 0, 0))
    prep = prepare(SILU, case, 0, 1)
    outcome = judge(SILU, "fp32", prep, _reply(prep, edit=lambda f, v, x: v.mul_(1 + 1e-3)))
    assert not outcome.ok and "atol=1e-05" in outcome.reason
    assert torch.isfinite(torch.tensor(outcome.max_abs_err))
