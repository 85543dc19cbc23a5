"""The in-engine audit's sampler (hotfloat.seams.audit): the key picks the same call sites in every engine and other
ones under another key; a site commits a device-sampled subset of its executions into its ring, keeps the latest,
and what it kept is exactly what the call saw and returned."""

import torch

from hotfloat.seams import AuditConfig, arm
from hotfloat.seams.audit import MAX_ENTRY_BYTES, RING, TABLE, Site, _Device
from hotfloat.seams.audit_dump import read_dump, write_dump
from hotfloat.slots import get_slot


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def stock_fused(x, residual, weight, eps):
    s = x.float() + residual.float()
    return (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype), s.to(x.dtype)


def audited_sites(key: int, calls: int = 64, rate: float = 0.25) -> list[int]:
    router = arm(None, audit=AuditConfig(key, rate=rate, rows=2))
    for _ in range(calls):
        router.silu_and_mul(torch.randn(3, 16), stock=stock_silu)
    return [h["site"] for h, _ in router.audit.dump()]


def test_the_key_picks_the_sites():
    sites = audited_sites(7)
    assert sites == audited_sites(7) and 6 <= len(sites) <= 28
    assert audited_sites(8) != sites
    assert audited_sites(7, rate=0.0) == [] and len(audited_sites(7, rate=1.0)) == 32  # capacity: the latest 32


def test_an_eager_entry_holds_the_window_the_call_saw_and_returned():
    router = arm(None, audit=AuditConfig(3, rate=1.0, rows=4))
    x, r, w = torch.randn(2, 10, 32), torch.randn(2, 10, 32), torch.rand(32) + 0.5
    x0, r0 = x.clone(), r.clone()

    def inplace_stock(x, residual, weight, eps):  # like sgl-kernel: overwrites its inputs and returns them
        out, res = stock_fused(x, residual, weight, eps)
        x.copy_(out)
        residual.copy_(res)
        return x, residual

    out, res = router.fused_add_rmsnorm(x, r, w, 1e-5, stock=inplace_stock)
    ((head, data),) = router.audit.dump()
    first, rows, total = head["rows"]
    assert (head["slot"], head["site"], head["execution"], head["dtype"]) == ("norm.fused_add_rmsnorm", 0, 1, "fp32")
    assert rows == 4 and total == 20 and 0 <= first <= 16 and head["scalars"] == {"eps": 1e-5}
    got = {
        k: torch.frombuffer(bytearray(data[v["offset"] :]), dtype=torch.float32)[
            : torch.Size(v["shape"]).numel()
        ].reshape(v["shape"])
        for k, v in head["tensors"].items()
    }
    window = slice(first, first + rows)
    assert torch.equal(got["x"], x0.reshape(20, 32)[window]) and torch.equal(
        got["residual"], r0.reshape(20, 32)[window]
    )
    assert torch.equal(got["weight"], w)
    assert torch.equal(got["out"], out.reshape(20, 32)[window]) and torch.equal(
        got["residual_out"], res.reshape(20, 32)[window]
    )


def test_wide_calls_keep_fewer_rows_so_entries_fit_a_message():
    router = arm(None, audit=AuditConfig(1, rate=1.0, rows=64))
    router.silu_and_mul(torch.randn(64, 2 * 8192), stock=stock_silu)
    ((head, data),) = router.audit.dump()
    assert head["rows"][1] == MAX_ENTRY_BYTES // (4 * 3 * 8192) and len(data) <= MAX_ENTRY_BYTES


def test_a_site_commits_a_sampled_subset_of_its_executions_and_keeps_the_latest():
    """What a CUDA-graph replay runs, here on CPU: stage the inputs, the call, commit; the secret table decides each
    execution's ring row (or the trash row) on the device, so a replay decides afresh with no host sync."""
    spec = get_slot("activation.silu_and_mul")
    x = torch.zeros(6, 8)
    table = _Device(AuditConfig(77, rate=0.3), torch.device("cpu")).table[100 : 100 + TABLE]
    cells = torch.zeros(RING + 2, dtype=torch.int64)
    buffers = {k: torch.empty(v) for k, v in Site.shapes(spec, {"T": 6, "D": 4}, 3, RING).items()}
    site = Site(spec, 5, {"x": x}, {}, (1, 3, 6), RING, table, cells, buffers)
    for e in range(1, 101):
        x.fill_(e)  # a replay sees fresh values in the same buffers
        site.copy_inputs({"x": x})
        site.commit({"out": stock_silu(x)})
    rows = {int(table[e]): e for e in range(1, 101)}  # the latest execution each row was given
    assert 15 <= sum(int(table[e]) < RING for e in range(1, 101)) <= 45 and int(cells[0]) == 100
    entries = site.entries()
    assert [h["execution"] for h, _ in entries] == sorted(e for r, e in rows.items() if r < RING)
    for head, data in entries:
        xs = torch.frombuffer(bytearray(data), dtype=torch.float32)[:24]
        assert (xs == head["execution"]).all() and head["rows"] == [1, 3, 6] and head["site"] == 5


def test_dumps_round_trip_through_files(tmp_path):
    router = arm(None, audit=AuditConfig(9, rate=0.5, rows=2))
    for _ in range(8):
        router.silu_and_mul(torch.randn(4, 16, dtype=torch.bfloat16), stock=stock_silu)
    entries = router.audit.dump()
    write_dump(tmp_path / "audit-1", entries)
    assert read_dump(tmp_path / "audit-1") == entries and entries
