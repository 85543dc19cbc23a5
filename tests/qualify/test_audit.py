"""The validator's audit (hotfloat.qualify.audit): each round's entries opened with the key and recomputed, exact
calls passing and wrong ones failing with their slot and call, every malformed or altered reply refused in one
sentence as its engine's fault, the engines held to the same calls, the bundle judged on the calls it served, and a
kernel wrong in any one round caught at the rate the docs state."""

import base64
import math

import pytest
import torch

from hotfloat.audit.config import AuditConfig
from hotfloat.audit.kinds import ROWWISE
from hotfloat.qualify.audit import audit_round, coverage, judge_audit
from hotfloat.engine.worker import audit_parts
from hotfloat.qualify.gate import furthest
from hotfloat.seams import arm

KEY = (1 << 62) + 11
CFG = AuditConfig(KEY, keep=4, rows=4, slots=ROWWISE)


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_norm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def stock_fused(x, residual, weight, eps):
    s = x.float() + residual.float()
    return stock_norm(s, weight, eps).to(x.dtype), s.to(x.dtype)


def engine(bundle=None, cfg=CFG):
    return arm(bundle, audit=cfg)


def serve(router, dtype=torch.float32, silu=stock_silu, calls=6, seed=0):
    """One round of the three row-wise slots on `router`."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(calls):
        x = torch.randn(2, 9, 64, generator=g).to(dtype)
        router.silu_and_mul(x, stock=silu)
        w = (1 + 0.1 * torch.randn(32, generator=g)).to(dtype)
        router.rmsnorm(x[..., :32], w, 1e-6, stock=stock_norm)
        router.fused_add_rmsnorm(x[..., :32], x[..., 32:], w, 1e-6, stock=stock_fused)


def handed(router, rnd=0, limit=5 << 19):
    return audit_parts(router.audit.dump(), rnd, limit=limit)


def record(index, role, parts, rnd=0, cfg=CFG):
    return audit_round(index, role, rnd, parts, cfg)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_exact_calls_pass_in_several_parts_round_after_round(dtype):
    routers = [engine() for _ in range(3)]
    recs = [None] * 3
    for rnd in range(3):
        for i, r in enumerate(routers):
            serve(r, dtype, seed=rnd)
            got = record(i, "BCB"[i], handed(r, rnd, limit=4096), rnd)
            recs[i] = got if recs[i] is None else recs[i].add(got)
    c = recs[1]
    assert c.error is None and set(c.slots) == {"activation.silu_and_mul", "norm.rmsnorm", "norm.fused_add_rmsnorm"}
    assert all(s.calls_audited == 12 and s.calls_failed == 0 for s in c.slots.values())  # 4 kept x 3 rounds
    assert {x.round for x in c.calls} == {0, 1, 2} and judge_audit(recs) is None
    cov = coverage(c)
    assert cov["activation.silu_and_mul"] == {0: (6, 0, 0), 1: (6, 0, 0), 2: (6, 0, 0)}


@pytest.mark.parametrize("dtype,error", [(torch.float32, 0.01), (torch.bfloat16, 0.1)])
def test_a_wrong_kernel_fails_with_its_slot_call_and_error(dtype, error):
    """1% off fails in fp32 (tolerance 1e-5); bf16's tolerance (2% + 0.02) is verify's, so 10% off fails there."""
    good, bad = engine(), engine()
    serve(good, dtype)
    serve(bad, dtype, silu=lambda x: stock_silu(x) * (1 + error))
    base, rec = record(0, "B", handed(good)), record(1, "C", handed(bad))
    silu = rec.slots["activation.silu_and_mul"]
    assert silu.calls_failed == silu.calls_audited == 4 and rec.slots["norm.rmsnorm"].calls_failed == 0
    status, reason = judge_audit([base, rec, base.model_copy(update={"index": 2})])
    assert status == "FAIL" and "4 of 4 audited calls of activation.silu_and_mul" in reason
    assert "of [18, 64]" in reason and "max abs err" in reason and silu.worst.ratio > 1
    assert "activation.silu_and_mul's" in furthest([rec])
    status, reason = judge_audit([rec.model_copy(update={"role": "B", "index": 0})])
    assert status == "NO_DECISION" and "baseline engine 0" in reason


def test_nan_outputs_fail():
    r = engine()
    serve(r, silu=lambda x: stock_silu(x) * float("nan"))
    rec = record(1, "C", handed(r))
    assert rec.slots["activation.silu_and_mul"].worst.ratio == math.inf and judge_audit([rec])[0] == "FAIL"


def parts_of(fn, calls=2):
    r = engine()
    serve(r, calls=calls)
    parts = handed(r)
    fn(parts)
    return record(1, "C", parts)


def _entry(parts, k=0):
    return parts[0]["entries"][k]


def _flip(parts):
    data = bytearray(base64.b64decode(parts[0]["data"]))
    data[_entry(parts)["offset"] + 100] ^= 1
    parts[0]["data"] = base64.b64encode(bytes(data)).decode()


@pytest.mark.parametrize(
    "tamper,why",
    [
        (_flip, "fails its MAC"),
        (lambda p: _entry(p).update(mac=str((int(_entry(p)["mac"]) + 1) % (1 << 64))), "fails its MAC"),
        (lambda p: _entry(p).update(execution=_entry(p)["execution"] + 1), "fails its MAC"),
        (lambda p: _entry(p).update(routed=not _entry(p)["routed"]), "fails its MAC"),
        (lambda p: _entry(p).update(words=10**6), "malformed"),
        (lambda p: _entry(p).update(words=5000), "do not fit"),
        (lambda p: _entry(p).update(words=3), "do not fit"),
        (lambda p: _entry(p).update(dims={"T": 18, "D": 33}), "belongs to no reported stratum|fails its MAC"),
        (lambda p: _entry(p).update(dims={"T": 18}), "not the slot's"),
        (lambda p: _entry(p).update(dims={"T": 1 << 23, "D": 32}), "do not fit|not the slot's"),
        (lambda p: _entry(p).update(slot="moe.fused_experts"), "not an audited slot"),
        (lambda p: _entry(p).update(slot="attention.prefill"), "not an audited slot"),
        (lambda p: _entry(p).update(dtype="fp8"), "malformed"),
        (lambda p: _entry(p).update(scalars={"eps": float("inf")}), "scalars"),
        (lambda p: _entry(p).update(extra=1), "malformed"),
        (lambda p: _entry(p).update(recheck="-1"), "malformed"),
        (lambda p: _entry(p).pop("recheck"), "malformed"),
        (lambda p: p[0].update(data="***"), "not base64"),
        (lambda p: p[0].update(round=5), "not 0"),
        (lambda p: p[0].update(parts=2), "missing or out of order"),
        (lambda p: p[0].update(error="boom"), "boom"),
        (lambda p: p[0]["strata"].append(dict(p[0]["strata"][0])), "reported twice"),
        (lambda p: p[0].update(strata=[]), "no reported stratum"),
        (lambda p: p[0]["entries"].append(dict(_entry(p))), "kept twice"),
        (lambda p: p[0]["strata"][0].update(calls=-1), "malformed"),
    ],
)
def test_a_malformed_or_altered_reply_is_refused_in_one_sentence(tamper, why):
    import re

    rec = parts_of(tamper)
    assert rec.error and "\n" not in rec.error and re.search(why, rec.error), rec.error
    status, reason = judge_audit([rec])
    assert status == "FAIL" and "refused" in reason


def test_judging_that_passes_its_deadline_is_the_engines_fault():
    r = engine()
    serve(r)
    rec = audit_round(1, "C", 0, handed(r), CFG, deadline_s=-1)
    assert rec.error and "deadline" in rec.error and judge_audit([rec])[0] == "FAIL"


def test_engines_that_made_or_kept_other_calls_are_told_apart():
    """Every engine of a qualification serves the same prompts: B and B' that differ is a broken engine
    (NO_DECISION); C that differs (more calls, or counters it tampered with) is C's fault."""
    a, b, c = engine(), engine(), engine()
    for r in (a, b, c):
        serve(r)
    c.silu_and_mul(torch.randn(3, 8), stock=stock_silu)  # one call more, in a stratum of its own
    recs = [record(i, "BCB"[i], handed(r)) for i, r in enumerate((a, c, b))]
    status, reason = judge_audit(recs)
    assert status == "FAIL" and "not the baseline's" in reason and "made 1 calls in engine 1, 0 in engine 0" in reason
    a, b, c = engine(), engine(), engine()
    for r in (a, b, c):
        serve(r)
    a.audit.rings[next(iter(a.audit.rings))].state[0] += 1  # B's counters no longer B''s
    serve(a, calls=0)
    recs = [record(i, "BCB"[i], handed(r)) for i, r in enumerate((a, c, b))]
    status, reason = judge_audit(recs)
    assert status == "NO_DECISION" and "baseline engines' audits disagree" in reason


def test_a_kernel_that_rewrites_its_inputs_after_computing_fails_and_stock_in_place_does_not(make_bundle):
    """Every output right for the inputs it saw, then the input rewritten (as a kernel that shortens the batch's page
    table for the next layers would): the recheck's MAC is not the pre tap's, and the audit says which call. A stock
    kernel that writes its inputs in place (SGLang's fused norm) is not held to it."""
    rewrites = bundle(make_bundle, name="rewrites", after="x[:, :d].mul_(0.5)")

    def inplace_stock(x):
        out = stock_silu(x)
        x[..., : x.shape[-1] // 2].zero_()
        return out

    recs = []
    for i, (b, stock) in enumerate(((None, inplace_stock), (rewrites, stock_silu), (None, stock_silu))):
        r = engine(b)
        g = torch.Generator().manual_seed(4)
        for _ in range(6):
            r.silu_and_mul(torch.randn(5, 32, generator=g), stock=stock)
        recs.append(record(i, "BCB"[i], handed(r)))
    assert not any(c.inputs_changed for c in recs[0].calls + recs[2].calls)
    c = recs[1]
    assert all(x.routed and x.inputs_changed for x in c.calls) and not any(s.calls_failed for s in c.slots.values())
    status, reason = judge_audit(recs, routed={"activation.silu_and_mul": 6})
    assert status == "FAIL" and "rewrote its inputs in 4 of the kept calls it served" in reason
    assert "activation.silu_and_mul execution" in reason


def bundle(make_bundle, error=0.0, lo=1, name="b", wrong=(0, 1 << 30), after=""):
    """A silu bundle `error` off on its calls wrong[0]..wrong[1]-1 (it counts them, as a kernel that wants to be wrong
    in one round only would), routed only for calls of at least `lo` tokens, running `after` once it has computed."""
    kernel = f"""
        import torch.nn.functional as F

        calls = [0]

        def run(x, out):
            d = x.shape[1] // 2
            off = {error} if {wrong[0]} <= calls[0] < {wrong[1]} else 0.0
            calls[0] += 1
            out.copy_((F.silu(x[:, :d].float()) * x[:, d:].float() * (1 + off)).to(out.dtype))
            {after}
    """
    manifest = f'''bundle_id = "{name}"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
dtypes = ["fp32", "bf16"]
architectures = ["cpu"]
metadata = "metadata/m.json"
'''
    return make_bundle(kernel, manifest=manifest, files={"metadata/m.json": f'{{"min_num_tokens": {lo}}}'}, name=name)


def test_the_bundle_is_judged_on_the_calls_it_served(make_bundle):
    """A kernel routed only on large calls is held to the calls it served: the stock calls C also made (most of its
    kept ones) neither outvote nor dilute it. 1% off in bf16 stays inside verify's tolerance, so only the accuracy
    check against stock can see it."""
    large_only = bundle(make_bundle, error=0.01, lo=64)
    recs = []
    for i, b in enumerate((None, large_only, None)):
        r = engine(b)
        g = torch.Generator().manual_seed(3)
        for t in (8, 8, 8, 8, 8, 8, 64, 64):
            r.silu_and_mul(torch.randn(t, 64, generator=g).to(torch.bfloat16), stock=stock_silu)
        recs.append(record(i, "BCB"[i], handed(r)))
    c = recs[1]
    assert sum(x.routed for x in c.calls) == 2 and sum(not x.routed for x in c.calls) == 4
    assert not any(x.inputs_changed for x in c.calls)  # the bundle's calls left their inputs as they found them
    assert not any(s.calls_failed for s in c.slots.values())
    status, reason = judge_audit(recs, slack=1.5, routed={"activation.silu_and_mul": 2})
    assert status == "FAIL" and "the bundle's calls of activation.silu_and_mul" in reason and "over 2 calls" in reason


def test_a_routed_slot_no_audit_saw_is_never_a_pass(make_bundle):
    routed = {"moe.fused_experts": 40}
    assert judge_audit([record(1, "C", handed(engine()))], routed=routed)[0] == "FAIL"
    exact = bundle(make_bundle, lo=64)
    r = engine(exact)
    r.silu_and_mul(torch.randn(8, 32), stock=stock_silu)
    rec = record(1, "C", handed(r))
    status, reason = judge_audit([rec], routed={"activation.silu_and_mul": 3})
    assert status == "FAIL" and "none of the audit's kept calls of it was served by the bundle" in reason


def test_a_kernel_wrong_in_any_one_round_is_caught(make_bundle):
    """The audit of round r is taken right after round r, and nothing later evicts it: a kernel that counts its calls
    and is wrong in one round alone (5 calls a round) fails, whichever round it picks."""
    for wrong_round in (0, 1, 3):
        span = (5 * wrong_round, 5 * wrong_round + 5)
        cand = bundle(make_bundle, error=0.01, name=f"round{wrong_round}", wrong=span)
        routers = [engine(), engine(cand), engine()]
        recs = [None] * 3
        for rnd in range(4):
            for i, r in enumerate(routers):
                g = torch.Generator().manual_seed(rnd)
                for _ in range(5):
                    r.silu_and_mul(torch.randn(6, 32, generator=g), stock=stock_silu)
                got = record(i, "BCB"[i], handed(r, rnd), rnd)
                recs[i] = got if recs[i] is None else recs[i].add(got)
        status, reason = judge_audit(recs, routed={"activation.silu_and_mul": 20})
        assert status == "FAIL" and f"of round {wrong_round}" in reason


def test_the_miss_rate_of_a_kernel_wrong_on_some_calls_of_a_round_is_the_stated_one():
    """docs/qualification.md: with `keep` kept of a stratum's n calls in a round, a kernel wrong on w of them (in
    every row of their windows) goes unseen with probability C(n-w, keep)/C(n, keep); here n=24, w=3, keep=4:
    0.5843. Over 300 keys the misses lie within 4 s.d. of it."""
    n, w, keep, trials = 24, 3, 4, 300
    wrong = {5, 11, 20}
    misses = 0
    for k in range(trials):
        cfg = AuditConfig(KEY + k, keep=keep, rows=2, slots=ROWWISE)
        r = engine(cfg=cfg)
        for i in range(n):
            x = torch.randn(4, 16)
            r.silu_and_mul(x, stock=(lambda x: stock_silu(x) * 1.01) if i in wrong else stock_silu)
        rec = record(1, "C", handed(r), cfg=cfg)
        misses += not rec.slots["activation.silu_and_mul"].calls_failed
    p = math.comb(n - w, keep) / math.comb(n, keep)
    assert abs(misses / trials - p) < 4 * math.sqrt(p * (1 - p) / trials), (misses, p)
