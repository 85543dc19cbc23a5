"""The validator's audit checker (hotfloat.qualify.audit): exact calls pass, wrong ones fail with their slot, call,
shape and error, malformed replies are refused with one sentence, and the judgement replays from the records."""

import base64

import pytest
import torch

from hotfloat.qualify.audit import audit_record, judge_audit
from hotfloat.qualify.gate import furthest
from hotfloat.qualify.records import AuditRecord
from hotfloat.qualify.engines.worker import audit_parts
from hotfloat.seams import AuditConfig, arm


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_norm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def stock_fused(x, residual, weight, eps):
    s = x.float() + residual.float()
    return stock_norm(s, weight, eps).to(x.dtype), s.to(x.dtype)


def served(dtype=torch.float32, silu=stock_silu, calls=6, limit=5 << 19):
    """The audit messages of an engine that served `calls` rounds of the three row-wise slots (every call audited)."""
    router = arm(None, audit=AuditConfig(11, rate=1.0, rows=4))
    g = torch.Generator().manual_seed(0)
    for _ in range(calls):
        x = torch.randn(2, 9, 64, generator=g).to(dtype)
        router.silu_and_mul(x, stock=silu)
        w = (1 + 0.1 * torch.randn(32, generator=g)).to(dtype)
        router.rmsnorm(x[..., :32], w, 1e-6, stock=stock_norm)
        router.fused_add_rmsnorm(x[..., :32], x[..., 32:], w, 1e-6, stock=stock_fused)
    return audit_parts(router.audit.dump(), limit=limit)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_exact_calls_pass_in_several_parts(dtype):
    parts = served(dtype, limit=4096)
    assert len(parts) > 1
    rec = audit_record(1, "C", parts)
    assert rec.error is None and set(rec.slots) == {"activation.silu_and_mul", "norm.rmsnorm", "norm.fused_add_rmsnorm"}
    assert all(s.calls_audited == 6 and s.calls_failed == 0 for s in rec.slots.values())
    assert judge_audit([audit_record(0, "B", parts), rec, audit_record(2, "B", parts)]) is None


@pytest.mark.parametrize("dtype,error", [(torch.float32, 0.01), (torch.bfloat16, 0.1)])
def test_a_wrong_kernel_fails_with_its_slot_call_shape_and_error(dtype, error):
    """1% off fails in fp32 (tolerance 1e-5); bf16's tolerance (2% + 0.02) is the verify one, so 10% off fails there
    (a 1% kernel in bf16 is the gate's to catch, against the twin)."""
    wrong = served(dtype, silu=lambda x: stock_silu(x) * (1 + error))
    rec = audit_record(1, "C", wrong)
    silu = rec.slots["activation.silu_and_mul"]
    assert silu.calls_failed == silu.calls_audited == 6 and rec.slots["norm.rmsnorm"].calls_failed == 0
    status, reason = judge_audit([audit_record(0, "B", served(dtype)), rec])
    assert status == "FAIL" and "6 of 6 audited calls of activation.silu_and_mul" in reason
    worst = silu.worst
    assert f"call {worst.site} " in reason and f"of [18, 64]" in reason and "max abs err" in reason
    assert worst.ratio > 1 and worst.max_abs_err > 0
    assert "activation.silu_and_mul's" in furthest([rec])
    status, reason = judge_audit([rec.model_copy(update={"role": "B", "index": 0})])
    assert status == "NO_DECISION" and "baseline engine 0" in reason


def test_nan_outputs_fail():
    rec = audit_record(1, "C", served(silu=lambda x: stock_silu(x) * float("nan")))
    assert rec.slots["activation.silu_and_mul"].worst.ratio == float("inf")
    assert judge_audit([rec])[0] == "FAIL"


def tamper(parts, fn):
    parts = [
        dict(p, entries=[dict(e, tensors={k: dict(v) for k, v in e["tensors"].items()}) for e in p["entries"]])
        for p in parts
    ]
    fn(parts)
    return parts


@pytest.mark.parametrize(
    "fn,match",
    [
        (lambda p: p[0].update(data="not base64!"), "not base64"),
        (lambda p: p[0].update(extra=1), "unknown key"),
        (lambda p: p[0]["entries"][0]["tensors"]["x"].update(offset=1 << 21), "beyond the data"),
        (lambda p: p[0]["entries"][0]["tensors"]["x"].update(shape=[4, 63]), "contradict"),
        (lambda p: p[0]["entries"][0]["tensors"].pop("out"), "not the slot's arguments"),
        (lambda p: p[0]["entries"][0].update(slot="collective.all_reduce"), "not an audited slot"),
        (lambda p: p[0]["entries"][0].update(rows=[16, 4, 18]), "rows"),
        (lambda p: p[0]["entries"][1].update(scalars={"eps": float("nan")}), "not finite"),
        (lambda p: p[0]["entries"][1].update(scalars={"eps": "1e-6"}), "eps"),
        (lambda p: p[0]["entries"][0].update(dtype="fp8"), "dtype"),
        (lambda p: p[0].update(part=1), "out of order"),
        (lambda p: p.clear(), "missing"),
    ],
)
def test_malformed_replies_are_refused_with_one_sentence(fn, match):
    rec = audit_record(1, "C", tamper(served(calls=1), fn))
    assert rec.calls == [] and match in rec.error and "\n" not in rec.error
    status, reason = judge_audit([rec])
    assert status == "FAIL" and "refused" in reason


def test_a_candidate_that_kept_no_calls_of_a_slot_fails():
    parts = served()
    empty = [{"type": "audit", "part": 0, "parts": 1, "entries": [], "data": base64.b64encode(b"").decode()}]
    status, reason = judge_audit([audit_record(0, "B", parts), audit_record(1, "C", empty)])
    assert status == "FAIL" and "kept no audited call" in reason


def test_the_judgement_replays_from_the_records():
    recs = [audit_record(0, "B", served()), audit_record(1, "C", served(silu=lambda x: stock_silu(x) * 1.01))]
    again = [AuditRecord.model_validate_json(r.model_dump_json()) for r in recs]
    assert again == recs and judge_audit(again) == judge_audit(recs)
    forged = recs[1].model_dump()
    forged["slots"]["activation.silu_and_mul"]["calls_failed"] = 0
    with pytest.raises(ValueError, match="summary disagrees"):
        AuditRecord.model_validate(forged)


def _h200(name):
    from pathlib import Path

    from hotfloat.qualify import load_evidence

    return load_evidence(
        Path(__file__).resolve().parents[2] / "docs" / "qualify-runs" / f"evidence-h200-llama8b-{name}.json.xz"
    )


def test_per_slot_accuracy_fails_a_bf16_kernel_1pct_off_that_verify_tolerances_pass():
    """bf16: a silu 1% off stays inside the verify tolerance (2% + 0.02) on every call, yet sits several times
    further from the reference than stock's rounding on the same calls: the accuracy check refuses it per slot."""
    stock, off = served(torch.bfloat16), served(torch.bfloat16, silu=lambda x: stock_silu(x) * 1.01)
    audits = [audit_record(0, "B", stock), audit_record(1, "C", off), audit_record(2, "B", stock)]
    assert audits[1].slots["activation.silu_and_mul"].calls_failed == 0 and judge_audit(audits) is None
    status, why = judge_audit(audits, slack=2.0)
    assert status == "FAIL" and "activation.silu_and_mul" in why and "as far from the fp32 reference" in why
    assert judge_audit([audits[0], audit_record(1, "C", stock), audits[2]], slack=2.0) is None


def test_on_the_h200_an_extra_exact_op_widened_the_twin_but_not_the_per_slot_audit():
    """Measured (docs/qualification.md): silu 1% off plus the accurate Triton fused op passed the twin gate (the
    twin perturbing both slots allowed 2 x 10.2% departures; C left the path at 16.2%), and its evidence, decided
    before the accuracy check existed, recomputes as recorded; with the check (audit_slack 2) the same records FAIL
    on silu alone, while the fused op sits exactly at stock's accuracy."""
    from hotfloat.qualify import recompute

    ev = _h200("audit-silu_1pct_with_fused")
    assert ev.decision.gate == "PASS" and recompute(ev) == ev.decision
    c = next(a for a in ev.audit if a.role == "C")
    assert all(s.calls_failed == 0 for s in c.slots.values())
    strict = recompute(ev.model_copy(update={"rule": ev.rule.model_copy(update={"audit_slack": 2.0})}))
    assert strict.status == "FAIL" and "activation.silu_and_mul are 3.7x" in strict.reason
    assert "fused" not in strict.reason


LADDER_REFUSED = ("silu_rel_0_5", "silu_rel_1", "silu_rel_3", "silu_rows_1pct", "fused_rel_0_5", "fused_rel_1")


@pytest.mark.parametrize(
    "name",
    [f"ladder-{r}" for r in LADDER_REFUSED]
    + [f"ladder-{e}" for e in ("fused_add_rmsnorm_triton", "attention_decode_triton")],
)
def test_the_h200_ladder_recomputes_as_recorded_and_todays_slacks_decide_it(name):
    """Issue 32's ladder (docs/qualification.md, "The ladder"): every run recomputes as recorded; under the slacks
    chosen from it every inaccurate rung (0.5% and up, wrong rows) FAILs by the audit, on the slot it perturbed, and
    the accurate examples pass it (speed decides them). By the audit, not merely FAIL: with the audit slack at 1.75
    the fused 0.5% rung still FAILs, by the twin gate, which would hide that the audit no longer refuses it."""
    from hotfloat.qualify import QualifyOptions, recompute

    ev = _h200(name)
    assert recompute(ev) == ev.decision
    today = QualifyOptions.for_device("cuda", gpu="NVIDIA H200").rule
    now = recompute(
        ev.model_copy(
            update={
                "rule": ev.rule.model_copy(update={"gate_slack": today.gate_slack, "audit_slack": today.audit_slack})
            }
        )
    )
    refused = name.removeprefix("ladder-") in LADDER_REFUSED
    audit = judge_audit(ev.audit, slack=today.audit_slack)
    assert (now.gate == "FAIL") == refused == (audit is not None), now.reason
    if refused:
        assert audit[0] == "FAIL" and now.reason.startswith("audit: "), now.reason
        assert ("silu_and_mul" in now.reason) == name.startswith("ladder-silu"), now.reason
