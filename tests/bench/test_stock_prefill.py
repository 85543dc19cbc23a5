"""The prefill-attention stock rows on CPU, with stand-ins for SGLang's triton extend kernel and FlashInfer's ragged and
paged prefill wrappers that keep the real APIs at the pin (SGLang 0.5.13.post1's 22-parameter `extend_attention_fwd`,
whose grid is sized by `max_len_extend`; FlashInfer's CUDA-graph wrappers, which read the indptrs and page table from
the buffers `plan` filled, and `merge_state`). The bench times both beside the example through its three checks.
The real kernels run only on the device (the prefill recipe, tools/device/recipes/prefill.sh)."""

import importlib
import sys
from pathlib import Path

import pytest
import torch

from hotfloat.bench import Options, run_bench
from hotfloat.bench.stock import Stock, stock_kernels
from hotfloat.bench.stock_prefill import flashinfer_prefill, sglang_fa3_extend, sglang_triton_extend
from hotfloat.slots import get_slot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "attention_prefill_triton"
SLOT = get_slot("attention.prefill")

ATTEND = """\
import torch


def attend(q, keys, vals, scale, causal):
    # q [E, Hq, D], keys/vals [S, Hkv, D]; causal aligns the E queries to the end of the S keys
    group = q.shape[1] // keys.shape[1]
    s = torch.einsum("ehd,nhd->hen", q.float(), keys.float().repeat_interleave(group, 1)) * scale
    if causal:
        seen = keys.shape[0] - q.shape[0] + torch.arange(q.shape[0])
        s = s.masked_fill(torch.arange(keys.shape[0]) > seen[:, None], float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num()
    o = torch.einsum("hen,nhd->ehd", p, vals.float().repeat_interleave(group, 1))
    return o, lse.transpose(0, 1)
"""

SGLANG_EXTEND = """\
import torch

from sglang.attend import attend


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                         custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0, skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None,
                         window_kv_offsets=None, xai_temperature_len=-1):
    assert custom_mask is None and is_causal and k_scale == v_scale == 1.0
    qo, kv = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        rows = min(qo[b + 1] - qo[b], max_len_extend)  # the real grid covers max_len_extend rows per request
        pages = kv_indices[kv[b]: kv[b + 1]]
        keys = torch.cat([k_buffer[pages], k_extend[qo[b]: qo[b + 1]]])
        vals = torch.cat([v_buffer[pages], v_extend[qo[b]: qo[b + 1]]])
        o, _ = attend(q_extend[qo[b]: qo[b + 1]], keys, vals, sm_scale, True)
        o_extend[qo[b]: qo[b] + rows] = o[:rows]
"""

FLASHINFER = """\
import torch

from sglang.attend import attend


class _Graphed:
    def _fill(self, **kv):
        for name, value in kv.items():  # CUDA-graph mode: plan copies into the fixed buffers run reads
            getattr(self, name)[: len(value)].copy_(value)
        self.planned = True


class BatchPrefillWithRaggedKVCacheWrapper(_Graphed):
    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, qo_indptr_buf=None,
                 kv_indptr_buf=None, custom_mask_buf=None, mask_indptr_buf=None, backend="auto", jit_args=None,
                 jit_kwargs=None):
        assert kv_layout == "NHD" and use_cuda_graph and len(qo_indptr_buf) == len(kv_indptr_buf)
        self.qo, self.kv, self.planned = qo_indptr_buf, kv_indptr_buf, False

    def plan(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk, head_dim_vo=None,
             custom_mask=None, packed_custom_mask=None, causal=False, sm_scale=None, q_data_type="float16",
             kv_data_type=None, **rest):
        assert qo_indptr.dtype == kv_indptr.dtype == torch.int32 and causal
        self._fill(qo=qo_indptr, kv=kv_indptr)
        self.scale = sm_scale

    def run(self, q, k, v, *args, out=None, lse=None, return_lse=False, **rest):
        assert self.planned
        qo, kv = self.qo.tolist(), self.kv.tolist()
        o, s = torch.empty(q.shape), torch.empty(q.shape[:2])
        for b in range(len(qo) - 1):
            o[qo[b]: qo[b + 1]], s[qo[b]: qo[b + 1]] = attend(
                q[qo[b]: qo[b + 1]], k[kv[b]: kv[b + 1]], v[kv[b]: kv[b + 1]], self.scale, True)
        return (o.to(q.dtype), s) if return_lse else o.to(q.dtype)


class BatchPrefillWithPagedKVCacheWrapper(_Graphed):
    runs = 0

    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, qo_indptr_buf=None,
                 paged_kv_indptr_buf=None, paged_kv_indices_buf=None, paged_kv_last_page_len_buf=None,
                 custom_mask_buf=None, mask_indptr_buf=None, backend="auto", jit_args=None, jit_kwargs=None):
        assert kv_layout == "NHD" and use_cuda_graph and backend == "fa2"
        self.qo, self.kv, self.pages, self.last = (qo_indptr_buf, paged_kv_indptr_buf, paged_kv_indices_buf,
                                                   paged_kv_last_page_len_buf)
        self.planned = False

    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len, num_qo_heads,
             num_kv_heads, head_dim_qk, page_size, head_dim_vo=None, custom_mask=None, packed_custom_mask=None,
             causal=False, sm_scale=None, q_data_type="float16", kv_data_type=None, **rest):
        assert paged_kv_indices.dtype == torch.int32 and page_size == 1 and not causal
        self._fill(qo=qo_indptr, kv=paged_kv_indptr, pages=paged_kv_indices, last=paged_kv_last_page_len)
        self.scale = sm_scale

    def run(self, q, paged_kv_cache, *args, out=None, lse=None, return_lse=False, **rest):
        assert self.planned and return_lse
        type(self).runs += 1
        k, v = (c[:, 0] for c in paged_kv_cache)
        qo, kv = self.qo.tolist(), self.kv.tolist()
        o, s = torch.zeros(q.shape), torch.full(q.shape[:2], float("-inf"))
        for b in range(len(qo) - 1):
            pages = self.pages[kv[b]: kv[b + 1]].long()
            if len(pages):
                o[qo[b]: qo[b + 1]], s[qo[b]: qo[b + 1]] = attend(
                    q[qo[b]: qo[b + 1]], k[pages], v[pages], self.scale, False)
        return o.to(q.dtype), s


def merge_state(v_a, s_a, v_b, s_b):
    s = torch.logaddexp(s_a, s_b)
    v = v_a.float() * torch.exp(s_a - s)[..., None] + v_b.float() * torch.exp(s_b - s)[..., None]
    return v.to(v_a.dtype), s
"""

FA3 = """\
import torch

from sglang.attend import attend


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, qv=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, page_table=None,
                            cu_seqlens_q=None, cu_seqlens_k_new=None, max_seqlen_q=None, rotary_seqlens=None,
                            q_descale=None, k_descale=None, v_descale=None, softmax_scale=None, causal=False, **rest):
    # sgl_kernel's FA3 over a paged cache ([pages, page_size, Hkv, D]), each request's keys the first
    # cache_seqlens[b] slots of its page_table row, causal aligned to the end of the sequence
    assert k is None and v is None and page_table.dtype == cache_seqlens.dtype == cu_seqlens_q.dtype == torch.int32
    assert k_cache.shape[1] == 1 and causal
    keys, vals, qo = k_cache[:, 0], v_cache[:, 0], cu_seqlens_q.tolist()
    o = torch.empty(q.shape)
    for b in range(len(qo) - 1):
        assert qo[b + 1] - qo[b] <= max_seqlen_q
        slots = page_table[b, : int(cache_seqlens[b])].long()
        o[qo[b]: qo[b + 1]], _ = attend(q[qo[b]: qo[b + 1]], keys[slots], vals[slots], softmax_scale, True)
    return o.to(q.dtype)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def standins(tmp_path, monkeypatch):
    """`sglang` (the extend kernel), `flashinfer` and `sgl_kernel` (FA3) stand-ins on the path of this process and of
    the bench child."""
    ops = "sglang/srt/layers/attention/triton_ops"
    packages = ("sglang", "sglang/srt", "sglang/srt/layers", "sglang/srt/layers/attention", ops)
    _write(
        tmp_path,
        {f"{p}/__init__.py": "" for p in packages}
        | {
            "sglang/attend.py": ATTEND,
            f"{ops}/extend_attention.py": SGLANG_EXTEND,
            "flashinfer/__init__.py": FLASHINFER,
            "sgl_kernel/__init__.py": "",
            "sgl_kernel/flash_attn.py": FA3,
        },
    )
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{ROOT / 'libs' / 'hotfloat'}")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] in ("sglang", "flashinfer", "sgl_kernel")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    return tmp_path


def _inputs(dims, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return SLOT.make_inputs(dims, torch.bfloat16, gen) | SLOT.make_scalars(dims, gen)


def _close(got, want) -> bool:
    return bool(((got.float() - want).abs() <= 2e-2 + 2e-2 * want.abs()).all())


DIMS = {"B": 3, "T": 30, "L": 12, "P": 40, "N": 40, "Hq": 8, "Hkv": 2, "D": 64}


def test_sglang_fa3_and_flashinfer_rows_pass_every_check_beside_the_example(standins):
    r = run_bench(str(EXAMPLE), Options(device="cpu", stock=("sgl_kernel", "sglang", "flashinfer")))
    assert r.status == "PASS" and r.skipped == []
    (row,) = r.rows
    assert row.slot == "attention.prefill"
    assert [i.name for i in row.impls] == ["ours:default", "sglang-fa3", "sglang-triton", "flashinfer"]
    assert all(i.check == "PASS" for i in row.impls), [i.reason for i in row.impls]
    assert set(row.ratio) == {"sglang-fa3", "sglang-triton", "flashinfer"}


def test_fa3_reads_the_new_tokens_from_the_pool_copy_and_refresh_follows_fresh_pages(standins):
    s = sglang_fa3_extend()
    assert isinstance(s, Stock)
    t = _inputs(DIMS)
    p = s.prepare(t)
    call = t | p.extra
    assert _close(s.fn(call), SLOT.reference(t)["out"])
    t["kv_indices"].copy_(torch.randperm(DIMS["P"]))  # fresh pages in the same buffer
    t["k"].copy_(torch.randn(t["k"].shape))
    assert not _close(s.fn(call), SLOT.reference(t)["out"])  # the call alone reads the stale table and pool copy
    p.refresh()
    assert _close(s.fn(call), SLOT.reference(t)["out"])


def test_sglang_gets_the_longest_new_token_count_of_the_set_and_refresh_follows_it(standins):
    s = sglang_triton_extend()
    assert isinstance(s, Stock)
    t = _inputs(DIMS)
    p = s.prepare(t)
    assert p.extra["stock_state"] == [int(t["qo_indptr"].diff().max())]
    assert _close(s.fn(t | p.extra), SLOT.reference(t)["out"])
    fresh = _inputs(DIMS, seed=3)  # other lengths drawn into the same buffers, as the harness does
    for name in ("qo_indptr", "kv_indptr"):
        t[name].copy_(fresh[name])
    p.refresh()
    assert p.extra["stock_state"] == [int(fresh["qo_indptr"].diff().max())]


def test_flashinfer_merges_the_prefix_and_replans_its_page_table(standins):
    s = flashinfer_prefill()
    assert isinstance(s, Stock) and s.prepare is not None
    t = _inputs(DIMS)
    p = s.prepare(t)
    call = t | p.extra
    assert _close(s.fn(call), SLOT.reference(t)["out"])
    t["kv_indices"].copy_(torch.randperm(DIMS["P"]))  # fresh pages in the same buffer
    assert not _close(s.fn(call), SLOT.reference(t)["out"])  # the call alone reads the plan's stale int32 copy
    p.refresh()
    assert _close(s.fn(call), SLOT.reference(t)["out"])


def test_flashinfer_runs_the_ragged_kernel_alone_when_no_request_has_a_prefix(standins):
    s = flashinfer_prefill()
    t = _inputs(DIMS | {"L": 0, "P": 4, "N": 4})
    paged = sys.modules["flashinfer"].BatchPrefillWithPagedKVCacheWrapper
    before = paged.runs
    assert _close(s.fn(t | s.prepare(t).extra), SLOT.reference(t)["out"]) and paged.runs == before


def test_absent_or_broken_libraries_are_skipped_with_their_reason(standins, monkeypatch):
    (standins / "flashinfer" / "__init__.py").write_text("VERSION = 'no prefill here'\n")
    (standins / "sglang/srt/layers/attention/triton_ops/extend_attention.py").write_text(
        "raise ImportError('libcuda.so.1: cannot open shared object file')\n"
    )
    (standins / "sgl_kernel/flash_attn.py").write_text("raise ImportError('Can not import FA3 in sgl_kernel.')\n")
    found, skipped = stock_kernels("attention.prefill", ("sgl_kernel", "sglang", "flashinfer"))
    assert found == []
    assert skipped["sgl_kernel"] == "import failed: ImportError: Can not import FA3 in sgl_kernel."  # the payload's
    assert skipped["sglang"] == "import failed: ImportError: libcuda.so.1: cannot open shared object file"
    assert (
        skipped["flashinfer"].startswith("import failed: AttributeError:") and "BatchPrefill" in skipped["flashinfer"]
    )
    for name in [m for m in sys.modules if m.split(".")[0] in ("sglang", "flashinfer", "sgl_kernel")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "path", [])  # a host where neither library is installed
    assert stock_kernels("attention.prefill", ("sglang", "flashinfer"))[1] == {
        "sglang": "not installed",
        "flashinfer": "not installed",
    }
