"""attention.prefill: the contract, an independent check of its reference, the inputs that expose shortcuts, the
shape coverage, and the Triton example passing verify under the interpreter in the sandbox."""

from __future__ import annotations

import math

import pytest
import torch

from hotfloat.bundle import load_bundle
from hotfloat.slots import SLOTS, Role, get_slot
from hotfloat.slots import prefill as module
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle

from ..conftest import EXAMPLES

SLOT = get_slot("attention.prefill")


def _naive(t) -> torch.Tensor:
    """Token by token and head by head in float64, building each token's key list by hand: nothing shared with the
    reference's batched einsum and mask."""
    q, k, v = t["q"].double(), t["k"].double(), t["v"].double()
    group = q.shape[1] // k.shape[1]
    out = torch.zeros_like(q)
    qo, kv = t["qo_indptr"].tolist(), t["kv_indptr"].tolist()
    for b in range(len(qo) - 1):
        pages = t["kv_indices"][kv[b] : kv[b + 1]].tolist()
        for i in range(qo[b], qo[b + 1]):
            keys = [t["k_buffer"][p].double() for p in pages] + [k[j] for j in range(qo[b], i + 1)]
            vals = [t["v_buffer"][p].double() for p in pages] + [v[j] for j in range(qo[b], i + 1)]
            for h in range(q.shape[1]):
                scores = torch.stack([key[h // group] @ q[i, h] for key in keys]) * t["sm_scale"]
                w = torch.softmax(scores, 0)
                out[i, h] = sum(wi * val[h // group] for wi, val in zip(w, vals, strict=True))
    return out


def _draw(dims, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return SLOT.make_inputs(dims, dtype, gen) | SLOT.make_scalars(dims, gen)


def test_registered_with_the_triton_extend_layout():
    assert SLOTS["attention.prefill"] is SLOT
    assert SLOT.signature() == (
        "attention.prefill(q[T,Hq,D], k[T,Hkv,D], v[T,Hkv,D], k_buffer[P,Hkv,D], v_buffer[P,Hkv,D], "
        "qo_indptr[B+1], kv_indptr[B+1], kv_indices[N], out[T,Hq,D], sm_scale=0.125)"
    )
    assert [a.name for a in SLOT.of_role(Role.OUTPUT)] == ["out"]
    assert [SLOT.dtype_of(SLOT.arg(n), "bf16") for n in ("qo_indptr", "kv_indptr", "kv_indices")] == [
        torch.int64,
        torch.int32,
        torch.int64,
    ]
    assert SLOT.dtypes == ("bf16", "fp16") and SLOT.count_dim == "T"


@pytest.mark.parametrize("b,t,cached,hq,hkv,d", [(3, 17, 9, 4, 4, 64), (2, 12, 0, 8, 2, 128), (4, 9, 6, 8, 1, 64)])
def test_reference_matches_a_naive_float64_loop(b, t, cached, hq, hkv, d):
    dims = {"B": b, "T": t, "L": cached, "P": 3 * cached + 5, "N": 3 * cached + 5, "Hq": hq, "Hkv": hkv, "D": d}
    t_ = _draw(dims, seed=hq * d)
    assert torch.allclose(SLOT.reference(t_)["out"].double(), _naive(t_), atol=1e-5, rtol=1e-5)


def test_reference_chunks_query_rows_without_changing_the_result(monkeypatch):
    t = _draw(dict(SLOT.shapes[2].dims))
    whole = SLOT.reference(t)["out"]
    monkeypatch.setattr(module, "SCORE_ELEMENTS", 1)  # one query row per chunk
    assert torch.allclose(SLOT.reference(t)["out"], whole, atol=1e-5, rtol=1e-5)  # same sums, other blocking


def test_inputs_are_ragged_scattered_and_fit_the_pool():
    dims = dict(SLOT.shapes[3].dims)
    for seed in range(20):
        dims["T"] = 1 + seed * 3  # the verifier jitters T, here also below the shape's batch
        t = _draw(dims, torch.bfloat16, seed)
        new, cached = t["qo_indptr"].diff(), t["kv_indptr"].diff()
        b = min(dims["B"], dims["T"])
        assert t["kv_indptr"].dtype == torch.int32 and t["qo_indptr"].dtype == t["kv_indices"].dtype == torch.int64
        assert len(new) == len(cached) == b and int(new.sum()) == dims["T"] and int(new.min()) >= 1
        assert t["q"].shape == (dims["T"], dims["Hq"], dims["D"]) and t["k"].shape == (
            dims["T"],
            dims["Hkv"],
            dims["D"],
        )
        assert int(cached.max()) == dims["L"] and (b == 1 or int(cached.min()) == 0)
        assert int(t["kv_indptr"][-1]) <= dims["P"] and sorted(t["kv_indices"].tolist()) == list(range(dims["P"]))


def _shortcuts(t) -> dict[str, torch.Tensor]:
    """What a kernel computes when it ignores the prefix, drops the causal mask over the new tokens, or aligns the
    mask to the start of the sequence (token i of a request sees only the first i + 1 keys of prefix + new)."""
    no_prefix = SLOT.reference(t | {"kv_indptr": torch.zeros_like(t["kv_indptr"])})["out"]
    q, out = t["q"].float(), {}
    bidir, start_aligned = torch.empty_like(q), torch.empty_like(q)
    group = q.shape[1] // t["k"].shape[1]
    qo, kv = t["qo_indptr"].tolist(), t["kv_indptr"].tolist()
    for b in range(len(qo) - 1):
        pages = t["kv_indices"][kv[b] : kv[b + 1]]
        keys = torch.cat([t["k_buffer"][pages], t["k"][qo[b] : qo[b + 1]]]).float().repeat_interleave(group, 1)
        vals = torch.cat([t["v_buffer"][pages], t["v"][qo[b] : qo[b + 1]]]).float().repeat_interleave(group, 1)
        s = torch.einsum("ehd,nhd->hen", q[qo[b] : qo[b + 1]], keys) * t["sm_scale"]
        bidir[qo[b] : qo[b + 1]] = torch.einsum("hen,nhd->ehd", torch.softmax(s, -1), vals)
        mask = torch.arange(keys.shape[0])[None, :] > torch.arange(qo[b + 1] - qo[b])[:, None]
        start_aligned[qo[b] : qo[b + 1]] = torch.einsum(
            "hen,nhd->ehd", torch.softmax(s.masked_fill(mask, -1e30), -1), vals
        )
    return out | {"no_prefix": no_prefix, "bidirectional": bidir, "start_aligned": start_aligned}


@pytest.mark.parametrize("index", [1, 2, 3])
def test_each_shortcut_is_far_outside_the_tolerance_on_every_cpu_shape(index):
    t = _draw(dict(SLOT.shapes[index].dims), torch.bfloat16, seed=index)
    t = {k: v.float() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in t.items()}
    want = SLOT.reference(t)["out"]
    tol = SLOT.tolerances["bf16"]
    for name, got in _shortcuts(t).items():
        bad = ((got - want).abs() > tol.atol + tol.rtol * want.abs()).float().mean()
        assert bad > 0.2, f"{name}: only {bad:.0%} of elements wrong"


def test_uniform_bench_shapes_count_exactly_the_bytes_and_flops():
    for shape in SLOT.bench_shapes:
        dims = shape.dims
        b, t, cached, hq, hkv, d = (dims[k] for k in ("B", "T", "L", "Hq", "Hkv", "D"))
        assert dims["Lmin"] == cached and dims["P"] == max(1, b * cached) and t % b == 0
        pairs = b * sum(cached + i + 1 for i in range(t // b))  # (query, key) pairs every new token attends
        assert SLOT.flops(dims) == 4 * hq * d * pairs
        assert SLOT.bytes_moved(dims, 2) == 4 * t * (hq + hkv) * d + b * cached * (4 * hkv * d + 8) + 8 * (b + 1)
        if shape.cpu:
            drawn = _draw(dims, torch.bfloat16)
            assert drawn["qo_indptr"].diff().tolist() == [t // b] * b
            assert drawn["kv_indptr"].diff().tolist() == [cached] * b


def test_verification_shapes_cover_the_issue_and_cpu_shapes_stay_unscaled():
    gpu = [s.dims for s in SLOT.shapes]
    assert {(d["Hq"], d["Hkv"], d["D"]) for d in gpu} >= {(32, 8, 128), (14, 2, 64)}  # llama-8b, Qwen2.5-0.5B
    assert {d["Hq"] // d["Hkv"] for d in gpu} >= {1, 4, 8} and {d["D"] for d in gpu} == {64, 128}
    assert any(d["B"] > 1 and d["L"] > 0 for d in gpu) and any(d["L"] == 0 for d in gpu)  # prefix + extend, pure
    budget = VerifyOptions().cpu_max_elements
    for shape in (s for s in SLOT.shapes if s.cpu):
        assert max(math.prod(SLOT.shape_of(a, shape.dims)) for a in SLOT.args if a.shape) <= budget
    assert {(s.dims["Hq"], s.dims["Hkv"]) for s in SLOT.shapes if s.cpu} >= {(32, 8)}


def test_the_triton_example_passes_verify_in_the_interpreter():
    report = verify_bundle(
        load_bundle(EXAMPLES / "attention_prefill_triton"),
        VerifyOptions(seed=42, dtypes=["bf16", "fp16"], timeout_s=300),
    )
    assert report.sandboxed and report.status is Status.PASS, [(r.shape, r.reason) for r in report.rows]
    assert {r.dtype for r in report.rows} == {"bf16", "fp16"}
    assert sum(not r.shape.startswith("drawn") for r in report.rows) == 2 * sum(s.cpu for s in SLOT.shapes)
