"""The per-request audit of attention.prefill (hotfloat.seams.audit_prefill): a sampled call is recast as a
one-request call of the slot whose reference is exactly the audited window of the original call, a stock or routed
kernel that is right passes the validator's recompute and one that is wrong fails it, and only a qualification that
names the slot audits (and hooks) it."""

import base64
import sys
from pathlib import Path

import pytest
import torch

from hotfloat.bundle import load_bundle
from hotfloat.qualify.audit import audit_record, judge_audit
from hotfloat.qualify.engines.worker import audit_parts
from hotfloat.qualify.protocol import audit_spec
from hotfloat.seams import AuditConfig, arm
from hotfloat.seams.audit import MAX_ENTRY_BYTES
from hotfloat.seams.audit_prefill import PrefillSite
from hotfloat.slots import get_slot
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang import prefill_attention  # noqa: E402
from hotfloat_sglang.plugin import seam_hooks  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
SLOT = get_slot("attention.prefill")
DIMS = {"B": 4, "T": 40, "L": 24, "P": 128, "N": 128, "Hq": 8, "Hkv": 2, "D": 32}
AUDIT = AuditConfig(21, rate=1.0, rows=4, slots=("attention.prefill",))


def draw(seed, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(seed)
    return SLOT.make_inputs(DIMS, dtype, g) | SLOT.make_scalars(DIMS, g)


def exact(t):
    return SLOT.reference(t)["out"].to(t["q"].dtype)


def serve(kernel, calls=8, audit=AUDIT):
    """The audit messages of an engine whose prefill calls ran `kernel` (stock: the audit sees stock and routed
    calls alike)."""
    router = arm(None, audit=audit)
    for seed in range(calls):
        t = draw(seed)
        args = [t[a.name] for a in SLOT.args if a.name != "out"]
        router.call("attention.prefill", lambda *_, t=t: kernel(t), *args)
    return router, audit_parts(router.audit.dump(), limit=4 << 20)


def decode(head, data):
    out = {}
    for name, ref in head["tensors"].items():
        dtype = SLOT.dtype_of(SLOT.arg(name), head["dtype"])
        n = torch.Size(ref["shape"]).numel()
        out[name] = torch.frombuffer(bytearray(data[ref["offset"] :]), dtype=dtype)[:n].reshape(ref["shape"])
    return out


def test_the_recast_call_is_the_audited_window_of_the_original():
    router = arm(None, audit=AUDIT)
    for seed in range(6):
        t = draw(seed)
        args = [t[a.name] for a in SLOT.args if a.name != "out"]
        router.call("attention.prefill", lambda *_, t=t: exact(t), *args)
        site = router.audit.eager[-1]
        [(head, data)] = site.entries()
        got = decode(head, data)
        start, r, heads = site.cut
        i0, rows, new = head["rows"]
        assert rows == r == got["q"].shape[0] and 1 <= r <= 4 and i0 + r <= new and head["site"] == seed
        assert got["k_buffer"].shape[1] == 1 and got["q"].shape[1] == 4  # one KV head and its query group
        recast = SLOT.reference({k: v for k, v in got.items() if k != "out"} | head["scalars"])["out"]
        assert torch.allclose(recast, SLOT.reference(t)["out"][start : start + r, heads], atol=1e-5, rtol=1e-5)
        assert torch.equal(got["out"], exact(t)[start : start + r, heads])


def test_right_kernels_pass_and_wrong_ones_fail_by_the_audit():
    _, parts = serve(exact)
    rec = audit_record(1, "C", parts)
    assert rec.error is None and rec.slots["attention.prefill"].calls_audited == 8
    assert rec.slots["attention.prefill"].calls_failed == 0
    assert judge_audit([audit_record(0, "B", parts), rec, audit_record(2, "B", parts)]) is None

    def no_prefix(t):  # attends over its own new tokens only: verify's draw catches it, and so does the engine's audit
        return exact(t | {"kv_indptr": torch.zeros_like(t["kv_indptr"])})

    for wrong, failed in ((no_prefix, 4), (lambda t: exact(t) * 1.1, 8)):  # no_prefix: where the request has one
        bad = audit_record(1, "C", serve(wrong)[1])
        assert bad.slots["attention.prefill"].calls_failed >= failed
        status, reason = judge_audit([audit_record(0, "B", parts), bad])
        assert status == "FAIL" and "audited calls of attention.prefill" in reason


def test_only_a_qualification_that_names_the_slot_audits_and_hooks_it():
    router, parts = serve(exact, audit=AuditConfig(21, rate=1.0, rows=4))
    assert parts[0]["entries"] == [] and "attention.prefill" not in router.hooked
    targets = {t for t, _ in seam_hooks(router)[0]}
    assert prefill_attention.TARGET not in targets
    audited = arm(None, audit=AUDIT)
    assert "attention.prefill" in audited.hooked and prefill_attention.TARGET in {t for t, _ in seam_hooks(audited)[0]}
    spec = audit_spec(1 / 16, {"attention.prefill", "activation.silu_and_mul"})
    assert spec["audit_slots"] == ["attention.prefill"] and AuditConfig.from_spec(spec).slots == ("attention.prefill",)
    assert AuditConfig.from_env(AuditConfig.from_spec(spec).to_env()) == AuditConfig.from_spec(spec)
    assert audit_spec(0, {"attention.prefill"}) == {}
    assert audit_spec(0.5, {"moe.fused_experts"})["audit_slots"] == []


@pytest.mark.parametrize("room", [0, 1, 3, 30])
def test_a_context_past_the_entry_bound_moves_the_window_or_skips_the_call(room):
    """Request 0 of this draw has 29 new tokens after 24 cached ones; a bound with room for `room` of its new tokens
    beside the prefix puts the window's start at or before `room`, and one without room for the prefix skips it."""
    t = draw(3)
    assert t["qo_indptr"].diff().tolist()[0] == 29 and t["kv_indptr"].diff().tolist()[0] == 24
    values = {"sm_scale": t["sm_scale"]}
    fixed, per_token = 4 * (2 * 4 + 2) * 32 * 2 + 64, 2 * 32 * 2 + 8
    starts = set()
    for draw_i0 in range(40):
        site = PrefillSite.stage(0, (0, 1, draw_i0), 4, fixed + per_token * (24 + room), t, values)
        assert site.window[1:] == (4, 29) and site.window[0] <= min(room, 25)
        starts.add(site.window[0])
    assert starts == set(range(min(room, 25) + 1))  # every start the bound allows is drawn
    assert PrefillSite.stage(0, (0, 1, 0), 4, fixed + per_token * 23, t, values) is None
    llama = 8 * (2 * 4 + 2) * 128 * 2 + 64, 2 * 128 * 2 + 8  # rows 8, group 4, D 128, bf16
    assert llama[0] + llama[1] * 2048 <= MAX_ENTRY_BYTES  # the qualification's longest prompt fits whole


def _int64(data: bytearray, at: int, value: int) -> None:
    data[at : at + 8] = value.to_bytes(8, "little", signed=True)


@pytest.mark.parametrize(
    "edit",
    [
        lambda e, d: _int64(d, e["tensors"]["kv_indices"]["offset"], e["tensors"]["k_buffer"]["shape"][0]),
        lambda e, d: _int64(d, e["tensors"]["kv_indices"]["offset"], -1),
        lambda e, d: _int64(d, e["tensors"]["qo_indptr"]["offset"] + 8, 0),
        lambda e, d: [e["tensors"][n].update(shape=[1, 1, 32]) for n in ("k_buffer", "v_buffer")],
    ],
    ids=["page past the pool", "negative page", "a request with no new token", "a pool shorter than its pages"],
)
def test_an_entry_whose_offsets_or_pages_leave_its_tensors_is_refused(edit):
    """Engine bytes are untrusted: the reference indexes with these, so they are checked first (one sentence)."""
    _, parts = serve(exact)
    [part] = parts
    k = next(i for i, e in enumerate(part["entries"]) if e["tensors"]["kv_indices"]["shape"][0] >= 2)
    entries = [dict(e, tensors={n: dict(v) for n, v in e["tensors"].items()}) for e in part["entries"]]
    data = bytearray(base64.b64decode(part["data"]))
    edit(entries[k], data)
    rec = audit_record(1, "C", [dict(part, entries=entries, data=base64.b64encode(bytes(data)).decode())])
    assert rec.calls == [] and "\n" not in rec.error
    assert f"entry {k} (attention.prefill): its offsets or page indices lie outside its own tensors" in rec.error
    assert judge_audit([rec])[0] == "FAIL"


def test_a_kernel_that_cheats_only_above_verifys_sizes_passes_verify_and_fails_the_audit():
    """Verify's calls are small (its largest prefill call is 2,048 new tokens on a GPU, 48 here); an engine's prompt
    batch is thousands. The audit samples the engine's own calls, so a kernel that skips the prefix only on big calls
    is caught there, routed through the bundle as C's calls are."""
    cheat = FIXTURES / "prefill_size_cheat"
    report = verify_bundle(load_bundle(cheat), VerifyOptions(seed=5, dtypes=["bf16"], timeout_s=300))
    assert report.status is Status.PASS, [(r.shape, r.reason) for r in report.rows]
    engine = {"B": 4, "T": 320, "L": 64, "P": 256, "N": 256, "Hq": 8, "Hkv": 2, "D": 32}
    records = []
    for index, role, bundle in ((0, "B", None), (1, "C", cheat)):
        router = arm(bundle, audit=AUDIT)
        for seed in range(4):
            g = torch.Generator().manual_seed(seed)
            t = SLOT.make_inputs(engine, torch.bfloat16, g) | SLOT.make_scalars(engine, g)
            router.call(
                "attention.prefill", lambda *_, t=t: exact(t), *[t[a.name] for a in SLOT.args if a.name != "out"]
            )
        assert router.counts()["attention.prefill"].routed == (4 if bundle else 0)
        records.append(audit_record(index, role, audit_parts(router.audit.dump(), limit=4 << 20)))
    assert records[0].slots["attention.prefill"].calls_failed == 0
    status, reason = judge_audit(records)
    assert status == "FAIL" and "audited calls of attention.prefill are wrong beyond its verify tolerance" in reason
