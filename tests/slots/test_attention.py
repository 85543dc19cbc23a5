"""attention.decode: the contract, an independent check of its reference, the inputs that expose shortcuts, the
shape coverage, and the Triton example passing verify under the interpreter in the sandbox."""

from __future__ import annotations

import math

import pytest
import torch

from hotfloat.bundle import load_bundle
from hotfloat.slots import SLOTS, Role, get_slot
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle

from ..conftest import EXAMPLES

SLOT = get_slot("attention.decode")


def _naive(t) -> torch.Tensor:
    """Head by head, token by token in float64: no einsum, no repeat_interleave, nothing shared with the reference."""
    q, k, v = t["q"].double(), t["k_buffer"].double(), t["v_buffer"].double()
    group = q.shape[1] // k.shape[1]
    out = torch.zeros_like(q)
    for b in range(q.shape[0]):
        pages = [int(p) for p in t["kv_indices"][int(t["kv_indptr"][b]) : int(t["kv_indptr"][b + 1])]]
        for h in range(q.shape[1]):
            scores = torch.stack([q[b, h] @ k[p, h // group] for p in pages]) * t["sm_scale"]
            w = torch.exp(scores - scores.max())
            out[b, h] = sum(wi * v[p, h // group] for wi, p in zip(w / w.sum(), pages, strict=False))
    return out


def test_registered_with_the_triton_backend_layout():
    assert SLOTS["attention.decode"] is SLOT
    assert SLOT.signature() == (
        "attention.decode(q[B,Hq,D], k_buffer[P,Hkv,D], v_buffer[P,Hkv,D], kv_indptr[B+1], "
        "kv_indices[N], out[B,Hq,D], sm_scale=0.125)"
    )
    assert [a.name for a in SLOT.of_role(Role.OUTPUT)] == ["out"]
    assert SLOT.dtype_of(SLOT.arg("kv_indptr"), "bf16") == torch.int32
    assert SLOT.dtype_of(SLOT.arg("kv_indices"), "fp16") == torch.int64
    assert SLOT.dtype_of(SLOT.arg("q"), "fp16") == torch.float16
    assert SLOT.dtypes == ("bf16", "fp16") and SLOT.count_dim == "B"


@pytest.mark.parametrize("hq,hkv,d", [(4, 4, 64), (8, 2, 128), (8, 1, 64)])
def test_reference_matches_a_naive_float64_loop(hq, hkv, d):
    dims = {"B": 4, "S": 9, "P": 40, "N": 40, "Hq": hq, "Hkv": hkv, "D": d}
    gen = torch.Generator().manual_seed(hq * d)
    t = SLOT.make_inputs(dims, torch.float32, gen) | SLOT.make_scalars(dims, gen)
    got = SLOT.reference(t)["out"]
    assert torch.allclose(got.double(), _naive(t), atol=1e-5, rtol=1e-5)


def test_inputs_are_ragged_scattered_and_fit_the_pool():
    dims = dict(SLOT.shapes[2].dims)
    seen_scales = set()
    for seed in range(20):
        dims["B"] = 1 + seed % 9  # the verifier jitters the batch beyond the shape's own
        t = SLOT.make_inputs(dims, torch.bfloat16, torch.Generator().manual_seed(seed))
        lens = t["kv_indptr"].diff()
        assert t["kv_indptr"].dtype == torch.int32 and t["kv_indices"].dtype == torch.int64
        assert int(t["kv_indptr"][0]) == 0 and int(lens.min()) >= 1 and int(t["kv_indptr"][-1]) <= dims["P"]
        assert sorted(t["kv_indices"].tolist()) == list(range(dims["P"]))  # a permutation of the whole pool
        assert int(lens.max()) == dims["S"] and (dims["B"] == 1 or int(lens.min()) == 1)
        seen_scales.add(
            round(SLOT.make_scalars(dims, torch.Generator().manual_seed(seed))["sm_scale"] * math.sqrt(dims["D"]), 3)
        )
    assert len(seen_scales) == 20 and min(seen_scales) >= 0.5 and max(seen_scales) <= 3.0


def test_the_scale_is_one_secret_per_case_so_graph_replays_keep_it():
    from hotfloat.verify.inputs import prepare
    from hotfloat.verify.plan import Case

    dims = dict(SLOT.shapes[1].dims)
    case = Case(0, "bf16", dims, (3, 3, 3), (0, 0, 0))
    scales = {prepare(SLOT, case, trial, seed).meta["args"][-1]["value"] for trial, seed in ((0, 1), (1, 2), (2, 3))}
    other = prepare(SLOT, Case(0, "bf16", dims, (4, 2, 3), (0, 0, 0)), 0, 1).meta["args"][-1]["value"]
    assert len(scales) == 1 and other not in scales


def test_uniform_bench_shapes_move_exactly_the_bytes_counted():
    for shape in SLOT.bench_shapes:
        dims = shape.dims
        t = SLOT.make_inputs(dims, torch.bfloat16, torch.Generator().manual_seed(1)) if shape.cpu else None
        kv_tokens = dims["B"] * dims["S"]
        assert dims["P"] == kv_tokens and dims["Lmin"] == dims["S"]
        assert SLOT.bytes_moved(dims, 2) == (
            kv_tokens * (4 * dims["Hkv"] * dims["D"] + 8) + 4 * dims["B"] * dims["Hq"] * dims["D"] + 4 * (dims["B"] + 1)
        )
        if t is not None:
            assert t["kv_indptr"].diff().tolist() == [dims["S"]] * dims["B"]


def test_verification_shapes_cover_the_issue_and_cpu_shapes_stay_unscaled():
    gpu = [s.dims for s in SLOT.shapes]
    assert {d["B"] for d in gpu} >= {1, 8, 32, 64, 128, 256} and max(d["S"] for d in gpu) == 32768
    assert {d["Hq"] // d["Hkv"] for d in gpu} >= {1, 4, 8} and {d["D"] for d in gpu} == {64, 128}
    budget = VerifyOptions().cpu_max_elements
    for shape in (s for s in SLOT.shapes if s.cpu):
        assert max(math.prod(SLOT.shape_of(a, shape.dims)) for a in SLOT.args if a.shape) <= budget


def test_the_triton_example_passes_verify_in_the_interpreter():
    report = verify_bundle(
        load_bundle(EXAMPLES / "attention_decode_triton"),
        VerifyOptions(seed=25, dtypes=["bf16", "fp16"], timeout_s=300),
    )
    assert report.sandboxed and report.status is Status.PASS, [(r.shape, r.reason) for r in report.rows]
    assert {r.dtype for r in report.rows} == {"bf16", "fp16"}
    assert sum(not r.shape.startswith("drawn") for r in report.rows) == 2 * sum(s.cpu for s in SLOT.shapes)


def test_bench_times_the_slots_own_decode_steps():
    from hotfloat.bench.shapes import select

    assert [s.dims for s in select(SLOT, "all", [], "cuda")] == [s.dims for s in SLOT.bench_shapes]
    assert [s.dims for s in select(SLOT, "decode", [], "cuda")] == []  # the token-row grid does not apply
    assert [s.dims for s in select(SLOT, "bench", [], "cpu")] == [s.dims for s in SLOT.bench_shapes if s.cpu]
