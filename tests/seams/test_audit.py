"""The in-engine audit's taps (hotfloat.seams.audit), on the host: every call of an audited slot runs them, each
round keeps a uniform sample of each stratum's calls and hands it over once, the key picks the same calls in every
engine, an entry holds exactly what the call saw before it ran and what it returned, and nothing of the window or
the inputs lies in device memory in the clear."""

import torch

from hotfloat.audit.config import AuditConfig
from hotfloat.audit.kinds import ROWWISE
from hotfloat.audit.layout import layout_for, recast
from hotfloat.audit.philox import PARAMS, unseal
from hotfloat.seams import arm
from hotfloat.slots import get_slot

KEY = (1 << 62) + 12345


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_fused(x, residual, weight, eps):
    s = x.float() + residual.float()
    return (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype), s.to(x.dtype)


def opened(router, dump, cfg):
    """Each kept entry of a dump, opened with the key: (header, inputs, outputs, rows)."""
    out = []
    for head, data in dump["entries"]:
        spec = get_slot(head["slot"])
        lay = layout_for(spec, head["dims"], head["dtype"], head["scalars"], cfg.rows, cfg.context)
        cipher = torch.frombuffer(bytearray(data), dtype=torch.int64)
        plain, tag = unseal(cfg.key, head["execution"], lay.ring, cipher, head["routed"])
        assert tag == int(head["mac"])
        out.append((head, *recast(lay, plain)))
    return out


def test_every_call_runs_the_taps_and_each_round_keeps_a_sample_of_its_own():
    cfg = AuditConfig(KEY, keep=3, rows=2, slots=ROWWISE)
    router = arm(None, audit=cfg)
    for calls in (20, 2, 0, 9):
        for _ in range(calls):
            router.silu_and_mul(torch.randn(5, 16), stock=stock_silu)
        dump = router.audit.dump()
        (stratum,) = dump["strata"] or [{"calls": 0, "kept": 0}]
        assert stratum["calls"] == calls and stratum["kept"] == len(dump["entries"]) == min(3, calls)
    executions = [h["execution"] for h, _ in dump["entries"]]
    assert all(23 <= e <= 31 for e in executions)  # the last round's, after 22 earlier calls


def test_strata_split_calls_by_size_dtype_and_scalars():
    router = arm(None, audit=AuditConfig(KEY, keep=2, slots=ROWWISE))
    for t in (4, 4, 7):
        router.silu_and_mul(torch.randn(t, 16), stock=stock_silu)
    router.silu_and_mul(torch.randn(4, 16, dtype=torch.bfloat16), stock=stock_silu)
    strata = router.audit.dump()["strata"]
    assert sorted((s["dims"]["T"], s["dtype"], s["calls"]) for s in strata) == [
        (4, "bf16", 1),
        (4, "fp32", 2),
        (7, "fp32", 1),
    ]


def test_the_key_keeps_the_same_calls_in_every_engine_and_other_ones_under_another():
    def kept(key):
        router = arm(None, audit=AuditConfig(key, keep=4, slots=ROWWISE))
        g = torch.Generator().manual_seed(0)
        for _ in range(60):
            router.silu_and_mul(torch.randn(3, 8, generator=g), stock=stock_silu)
        return [h["execution"] for h, _ in router.audit.dump()["entries"]]

    assert kept(KEY) == kept(KEY) and len(kept(KEY)) == 4
    assert kept(KEY) != kept(KEY + 1)


def test_an_entry_holds_what_the_call_saw_before_it_ran_and_what_it_returned():
    cfg = AuditConfig(KEY, keep=8, rows=4, slots=ROWWISE)
    router = arm(None, audit=cfg)
    x, r, w = torch.randn(2, 10, 32), torch.randn(2, 10, 32), torch.rand(32) + 0.5
    x0, r0 = x.clone(), r.clone()

    def inplace_stock(x, residual, weight, eps):  # like sgl-kernel: overwrites its inputs and returns them
        out, res = stock_fused(x, residual, weight, eps)
        x.copy_(out)
        residual.copy_(res)
        return x, residual

    out, res = router.fused_add_rmsnorm(x, r, w, 1e-5, stock=inplace_stock)
    ((head, ins, outs, (start, rows, total)),) = opened(router, router.audit.dump(), cfg)
    assert (head["slot"], head["execution"], head["dtype"], head["scalars"]) == (
        "norm.fused_add_rmsnorm",
        1,
        "fp32",
        {"eps": 1e-5},
    )
    assert rows == 4 and total == 20 and 0 <= start <= 16
    window = slice(start, start + rows)
    assert torch.equal(ins["x"], x0.reshape(20, 32)[window]) and torch.equal(
        ins["residual"], r0.reshape(20, 32)[window]
    )
    assert torch.equal(ins["weight"], w)
    assert torch.equal(outs["out"], out.reshape(20, 32)[window])
    assert torch.equal(outs["residual_out"], res.reshape(20, 32)[window])


def test_no_window_input_or_decision_lies_in_the_ring_in_the_clear():
    """A kernel may read device memory it was not handed: the stage and the rows hold ciphertext, so the inputs'
    bytes (which it knows) appear nowhere in them, and the parameters read as noise."""
    router = arm(None, audit=AuditConfig(KEY, keep=2, rows=3, slots=ROWWISE))
    x = torch.arange(6 * 64, dtype=torch.float32).reshape(6, 64) / 7
    for _ in range(5):
        router.silu_and_mul(x, stock=stock_silu)
    (ring,) = router.audit.rings.values()
    raw = ring.data.contiguous().view(torch.float32)
    for row in x:
        assert not any(
            torch.equal(raw[k, i : i + 64], row) for k in range(raw.shape[0]) for i in range(0, raw.shape[1] - 63)
        )
    params = ring.data[:, :PARAMS]
    assert not ((params >= 0) & (params < 64)).all(dim=1).any()  # no row's parameters are small plaintext numbers


def test_a_call_outside_the_audited_slots_is_not_tapped():
    router = arm(None, audit=AuditConfig(KEY))
    assert (
        "attention.prefill" not in router.hooked
        and router.audit.stage(get_slot("attention.prefill"), {}, {}, {}) is None
    )
    assert "attention.prefill" in arm(None, audit=AuditConfig(KEY, slots=("attention.prefill",))).hooked
