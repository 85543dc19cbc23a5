"""The in-engine audit of the attention slots, through the router as an engine calls them: a right kernel's prefill
and decode entries pass the validator's recompute, a wrong one fails it, a kernel that cheats only above verify's
sizes passes verify and fails the audit, and only a qualification that names a slot hooks and audits it."""

import sys
from pathlib import Path

import torch

from hotfloat.audit.config import AuditConfig
from hotfloat.bundle import load_bundle
from hotfloat.qualify.audit import audit_round, judge_audit
from hotfloat.engine.worker import audit_parts
from hotfloat.qualify.protocol import audit_config
from hotfloat.qualify.workload import make_workload
from hotfloat.seams import arm
from hotfloat.slots import get_slot
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams import prefill_attention  # noqa: E402
from hotfloat_sglang.plugin import seam_hooks  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
KEY = (1 << 62) + 21
AUDIT = AuditConfig(KEY, keep=4, rows=4, context=512, slots=("attention.prefill", "attention.decode"))
PREFILL = {"B": 4, "T": 40, "L": 24, "P": 128, "N": 128, "Hq": 8, "Hkv": 2, "D": 32}
DECODE = {"B": 6, "S": 90, "P": 300, "N": 300, "Hq": 8, "Hkv": 2, "D": 32}


def draw(slot, dims, seed, dtype=torch.bfloat16):
    """Fresh inputs per call; the scale is one per engine (it is part of a stratum, as the model fixes it)."""
    spec = get_slot(slot)
    return spec.make_inputs(dims, dtype, torch.Generator().manual_seed(seed)) | spec.make_scalars(
        dims, torch.Generator().manual_seed(0)
    )


def exact(slot):
    spec = get_slot(slot)
    return lambda t: spec.reference(t)["out"].to(t["q"].dtype)


def serve(slot, dims, kernel, bundle=None, calls=8, audit=AUDIT):
    """A round of `calls` calls of an attention slot through a router (stock: `kernel`), handed over."""
    spec, router = get_slot(slot), arm(bundle, audit=audit)
    for seed in range(calls):
        t = draw(slot, dims, seed)
        router.call(slot, lambda *_, t=t: kernel(t), *[t[a.name] for a in spec.args if a.name != "out"])
    return router, audit_parts(router.audit.dump(), 0, limit=4 << 20)


def test_right_attention_kernels_pass_and_wrong_ones_fail():
    for slot, dims in (("attention.prefill", PREFILL), ("attention.decode", DECODE)):
        _, parts = serve(slot, dims, exact(slot))
        rec = audit_round(1, "C", 0, parts, AUDIT)
        assert rec.error is None and rec.slots[slot].calls_audited == 4 and rec.slots[slot].calls_failed == 0
        base = audit_round(0, "B", 0, parts, AUDIT)
        assert judge_audit([base, rec, base.model_copy(update={"index": 2})]) is None
        bad = audit_round(1, "C", 0, serve(slot, dims, lambda t, s=slot: exact(s)(t) * 1.1)[1], AUDIT)
        assert bad.slots[slot].calls_failed == 4
        status, reason = judge_audit([base, bad])
        assert status == "FAIL" and f"audited calls of {slot}" in reason


def test_a_prefill_kernel_that_ignores_the_prefix_fails_where_a_request_has_one():
    def no_prefix(t):
        return exact("attention.prefill")(t | {"kv_indptr": torch.zeros_like(t["kv_indptr"])})

    rec = audit_round(1, "C", 0, serve("attention.prefill", PREFILL, no_prefix, calls=16)[1], AUDIT)
    assert rec.slots["attention.prefill"].calls_failed >= 1


def test_a_kernel_that_cheats_only_above_verifys_sizes_passes_verify_and_fails_the_audit():
    """Verify's calls are small (its largest prefill call is 2,048 new tokens on a GPU, 48 here); an engine's prompt
    batch is thousands. The audit keeps the engine's own calls, so a kernel that skips the prefix only on big calls
    is caught there, routed through the bundle as C's calls are."""
    cheat = FIXTURES / "prefill_size_cheat"
    report = verify_bundle(load_bundle(cheat), VerifyOptions(seed=5, dtypes=["bf16"], timeout_s=300))
    assert report.status is Status.PASS, [(r.shape, r.reason) for r in report.rows]
    engine = {"B": 4, "T": 320, "L": 64, "P": 256, "N": 256, "Hq": 8, "Hkv": 2, "D": 32}
    records = []
    for index, role, bundle in ((0, "B", None), (1, "C", cheat)):
        router, parts = serve("attention.prefill", engine, exact("attention.prefill"), bundle, calls=4)
        assert router.counts()["attention.prefill"].routed == (4 if bundle else 0)
        records.append(audit_round(index, role, 0, parts, AUDIT))
    assert records[0].slots["attention.prefill"].calls_failed == 0
    assert all(c.routed for c in records[1].calls)
    status, reason = judge_audit(records)
    assert status == "FAIL" and "audited calls of attention.prefill are wrong beyond its verify tolerance" in reason


def test_only_a_qualification_that_names_the_slot_audits_and_hooks_it():
    """The audited slots are the candidate's declared ones, in every engine (the taps cost each engine the same);
    B and B' hook an attention seam only when the candidate declares that slot."""
    plain = AuditConfig(KEY)
    router, parts = serve("attention.prefill", PREFILL, exact("attention.prefill"), audit=plain)
    assert parts[0]["entries"] == [] and "attention.prefill" not in router.hooked
    assert prefill_attention.TARGET not in {t for t, _ in seam_hooks(router)[0]}
    audited = arm(None, audit=AUDIT)
    assert "attention.prefill" in audited.hooked and prefill_attention.TARGET in {t for t, _ in seam_hooks(audited)[0]}
    work = make_workload("sglang", 1000, seed=3)
    cfg = audit_config(4, {"attention.prefill", "activation.silu_and_mul", "moe.fused_experts"}, work)
    longest = max(r.prompt_len + r.max_new_tokens for b in work.batches for r in b)
    assert cfg.slots == ("activation.silu_and_mul", "attention.prefill") and cfg.keep == 4  # declared, with a layout
    assert cfg.context == longest == 1945
    assert 1 << 62 <= cfg.key < 1 << 63 and audit_config(4, set(), work).key != cfg.key
    assert audit_config(0, {"attention.prefill"}, work) is None
    assert AuditConfig.from_wire(cfg.to_wire()) == cfg
