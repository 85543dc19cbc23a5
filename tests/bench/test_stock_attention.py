"""The decode-attention stock rows on CPU, with stand-ins for SGLang's triton kernel and FlashInfer's paged decode
that keep the real APIs at the pin (SGLang 0.5.13.post1's 18-parameter `decode_attention_fwd` and its asserts;
FlashInfer 0.6.12's CUDA-graph wrapper, which reads the page table from the buffers `plan` filled). The bench times
both beside the example through its three checks; the last one (fresh inputs in the same buffers) passes only
because each set's int32 page table and plan are remade outside the timed call. Absent libraries are skipped with
their reason; the real kernels run only on the device (BENCH_EXAMPLES=attention_decode_triton bash tools/device/run.sh engine_install:90 bench_stock:300)."""

import importlib
import sys
from pathlib import Path

import pytest
import torch

from hotfloat.bench import Options, run_bench
from hotfloat.bench.stock import ADAPTED_ONLY, Stock, flashinfer_decode, sglang_triton_decode, stock_kernels
from hotfloat.slots import get_slot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "attention_decode_triton"

ATTEND = """\
import torch


def attend(q, k, v, indptr, indices, scale):
    out = torch.empty(q.shape, dtype=torch.float32)
    group = q.shape[1] // k.shape[1]
    for b in range(q.shape[0]):
        pages = indices[int(indptr[b]): int(indptr[b + 1])].long()
        kb = k[pages].float().repeat_interleave(group, dim=1)
        vb = v[pages].float().repeat_interleave(group, dim=1)
        p = torch.softmax(torch.einsum("hd,lhd->hl", q[b].float(), kb) * scale, dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", p, vb)
    return out
"""

SGLANG_DECODE = """\
import torch

from sglang.attend import attend


def decode_attention_fwd(q, k_buffer, v_buffer, o, kv_indptr, kv_indices, attn_logits, attn_lse, num_kv_splits,
                         max_kv_splits, sm_scale, k_scale, v_scale, logit_cap=0.0, sinks=None, xai_temperature_len=-1,
                         has_mla=False, use_pdl=False):
    assert max_kv_splits == attn_logits.shape[2]
    assert q.shape[0] <= kv_indptr.shape[0] - 1
    assert q.shape[0] <= attn_logits.shape[0]
    assert attn_logits.dtype == attn_lse.dtype == torch.float32 and attn_lse.shape == attn_logits.shape[:3]
    assert num_kv_splits.dtype == torch.int32 and bool(((num_kv_splits >= 1) & (num_kv_splits <= max_kv_splits)).all())
    o.copy_(attend(q, k_buffer, v_buffer, kv_indptr, kv_indices, sm_scale * k_scale) * v_scale)
"""

SGLANG_METADATA = """\
class _NoInterpreter:
    def __getitem__(self, grid):
        raise RuntimeError("the split-count kernel does not run under the Triton interpreter")


get_num_kv_splits_triton = _NoInterpreter()
"""

SGLANG_SERVER_ARGS = """\
from dataclasses import dataclass


@dataclass
class ServerArgs:
    triton_attention_num_kv_splits: int = 8
"""

FLASHINFER = """\
import torch

from sglang.attend import attend


class BatchDecodeWithPagedKVCacheWrapper:
    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, use_tensor_cores=False,
                 paged_kv_indptr_buffer=None, paged_kv_indices_buffer=None, paged_kv_last_page_len_buffer=None,
                 backend="auto", jit_args=None):
        assert kv_layout == "NHD" and use_cuda_graph and backend in ("auto", "fa2", "fa3")
        self._indptr, self._indices, self._last = (paged_kv_indptr_buffer, paged_kv_indices_buffer,
                                                   paged_kv_last_page_len_buffer)
        self._planned = False

    def plan(self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
             pos_encoding_mode="NONE", window_left=-1, logits_soft_cap=None, q_data_type="float16",
             kv_data_type=None, o_data_type=None, data_type=None, sm_scale=None, rope_scale=None, rope_theta=None,
             non_blocking=True, block_tables=None, seq_lens=None, fixed_split_size=None, disable_split_kv=False):
        # The real JIT module is built for int32 page tables; in CUDA-graph mode plan copies into the fixed buffers.
        assert indptr.dtype == indices.dtype == last_page_len.dtype == torch.int32 and page_size == 1
        assert len(indices) <= len(self._indices) and bool((last_page_len == 1).all())
        self._indptr.copy_(indptr)
        self._indices[: len(indices)].copy_(indices)
        self._last.copy_(last_page_len)
        self._scale, self._planned = sm_scale, True

    def run(self, q, paged_kv_cache, *args, q_scale=None, k_scale=None, v_scale=None, out=None, lse=None,
            return_lse=False, enable_pdl=None, window_left=None, sinks=None, q_len_per_req=1,
            skip_softmax_threshold_scale_factor=None, kv_cache_sf=None):
        assert self._planned
        k, v = paged_kv_cache
        assert k.dim() == 4 and k.shape[1] == 1
        result = attend(q, k[:, 0], v[:, 0], self._indptr, self._indices, self._scale).to(q.dtype)
        if out is None:
            return result
        out.copy_(result)
        return out
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def standins(tmp_path, monkeypatch):
    """`sglang` (the decode kernel, its metadata kernel, ServerArgs) and `flashinfer` stand-ins on the path of this
    process and of the bench child."""
    ops = "sglang/srt/layers/attention/triton_ops"
    _write(
        tmp_path,
        {
            "sglang/__init__.py": "",
            "sglang/attend.py": ATTEND,
            "sglang/srt/__init__.py": "",
            "sglang/srt/server_args.py": SGLANG_SERVER_ARGS,
            "sglang/srt/layers/__init__.py": "",
            "sglang/srt/layers/attention/__init__.py": "",
            f"{ops}/__init__.py": "",
            f"{ops}/decode_attention.py": SGLANG_DECODE,
            f"{ops}/metadata.py": SGLANG_METADATA,
            "flashinfer/__init__.py": FLASHINFER,
        },
    )
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{ROOT / 'libs' / 'hotfloat'}")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] in ("sglang", "flashinfer")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    return tmp_path


def test_sglang_and_flashinfer_rows_pass_every_check_beside_the_example(standins):
    r = run_bench(str(EXAMPLE), Options(device="cpu", stock=("sgl_kernel", "sglang", "flashinfer")))
    assert r.status == "PASS" and r.skipped == []
    (row,) = r.rows
    assert row.slot == "attention.decode"
    assert [i.name for i in row.impls] == ["ours:default", "sglang-triton", "flashinfer"]
    assert all(i.check == "PASS" for i in row.impls), [i.reason for i in row.impls]
    assert set(row.ratio) == {"sglang-triton", "flashinfer"} and row.best_stock in row.ratio


def _inputs(dims, seed=0):
    slot = get_slot("attention.decode")
    gen = torch.Generator().manual_seed(seed)
    t = slot.make_inputs(dims, torch.bfloat16, gen) | slot.make_scalars(dims, gen)
    return slot, t


def _close(got, want) -> bool:
    return bool(((got.float() - want).abs() <= 2e-2 + 2e-2 * want.abs()).all())


def test_flashinfer_page_table_is_converted_outside_the_call_and_remade_by_refresh(standins):
    s = flashinfer_decode()
    assert isinstance(s, Stock) and s.prepare is not None
    slot, t = _inputs({"B": 3, "S": 40, "P": 100, "N": 100, "Hq": 8, "Hkv": 2, "D": 64})
    p = s.prepare(t)
    call = t | p.extra
    assert _close(s.fn(call), slot.reference(t)["out"])
    t["kv_indices"].copy_(torch.randperm(100))  # fresh pages in the same buffer, as the harness draws them
    assert not _close(s.fn(call), slot.reference(t)["out"])  # the call alone reads the plan's stale int32 copy
    p.refresh()
    assert _close(s.fn(call), slot.reference(t)["out"])


def test_sglang_splits_at_the_maximum_without_a_core_count_and_shares_one_workspace(standins):
    s = sglang_triton_decode()
    assert isinstance(s, Stock)
    dims = {"B": 3, "S": 40, "P": 100, "N": 100, "Hq": 8, "Hkv": 8, "D": 64}
    slot, t = _inputs(dims)
    _, t2 = _inputs(dims, seed=1)
    p, p2 = s.prepare(t), s.prepare(t2)
    logits, lse, splits, pdl = p.extra["stock_state"]
    assert logits.shape == (3, 8, 8, 64) and lse.shape == (3, 8, 8) and not pdl
    assert splits.tolist() == [8, 8, 8]  # SGLang's get_num_kv_splits when the device reports no cores (CPU)
    assert p2.extra["stock_state"][0] is logits  # one engine step shares its workspace across layers
    assert _close(s.fn(t | p.extra), slot.reference(t)["out"])
    assert _close(s.fn(t2 | p2.extra), slot.reference(t2)["out"])


def test_absent_or_broken_libraries_are_skipped_with_their_reason(standins, monkeypatch):
    (standins / "flashinfer" / "__init__.py").write_text("VERSION = 'no decode here'\n")
    (standins / "sglang/srt/layers/attention/triton_ops/decode_attention.py").write_text(
        "raise ImportError('libcuda.so.1: cannot open shared object file')\n"
    )
    found, skipped = stock_kernels("attention.decode", ("sgl_kernel", "sglang", "flashinfer", "elsewhere"))
    assert found == []
    assert skipped == {
        "sglang": "import failed: ImportError: libcuda.so.1: cannot open shared object file",
        "flashinfer": "import failed: AttributeError: module 'flashinfer' has no attribute "
        "'BatchDecodeWithPagedKVCacheWrapper'",
    }
    for name in [m for m in sys.modules if m.split(".")[0] in ("sglang", "flashinfer")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "path", [])  # a host where neither library is installed
    assert stock_kernels("attention.decode", ("sglang", "flashinfer"))[1] == {
        "sglang": "not installed",
        "flashinfer": "not installed",
    }


def test_engine_only_modules_stay_out_of_the_token_row_slots():
    assert "sglang" in ADAPTED_ONLY
    found, skipped = stock_kernels("norm.rmsnorm", ("sglang",))
    assert [s.name for s in found] == ["torch-eager", "torch.rms_norm"] and skipped == {}


def test_a_prepared_stock_may_not_overwrite_inputs():
    with pytest.raises(ValueError, match="writes only its own buffers"):
        Stock("x", lambda t: t["q"], overwrites=("q",), prepare=lambda t: None)
