"""The MoE slots' stock rows on CPU, with a stand-in for SGLang's triton fused_experts that keeps its API at the pin
(in place over the hidden states, the StandardTopKOutput and MoeRunnerConfig it reads, the global server args it
needs): the bench times it beside both examples through every check, the reduce slot's row as fused_experts then
the all-reduce on the bench's one-rank group, and a process without server args gets SGLang's defaults. The real
kernel runs only on the device (the bench_stock recipe with BENCH_EXAMPLES=moe_triton)."""

import importlib
import sys
from pathlib import Path

import pytest
import torch

from hotfloat.bench import Options, run_bench
from hotfloat.bench.stock import stock_kernels
from hotfloat.slots import DTYPES, get_slot

ROOT = Path(__file__).resolve().parents[2]

FUSED = """\
import torch

from sglang.srt.server_args import get_global_server_args


def fused_experts(hidden_states, w1, w2, topk_output, moe_runner_config, b1=None, b2=None):
    get_global_server_args()  # raises without server args, as SGLang's config lookup does
    assert moe_runner_config.inplace and moe_runner_config.num_experts == w1.shape[0] == moe_runner_config.num_local_experts
    topk_weights, topk_ids, _ = topk_output
    assert topk_ids.dtype == torch.int32 and topk_weights.dtype == torch.float32
    inter = w2.shape[-1]
    out = torch.zeros(hidden_states.shape)
    for row, (ids, weights) in enumerate(zip(topk_ids.tolist(), topk_weights.tolist())):
        for e, w in zip(ids, weights):
            h = (w1[e].float() @ hidden_states[row].float()).to(hidden_states.dtype).float()
            act = (torch.nn.functional.silu(h[:inter]) * h[inter:]).to(hidden_states.dtype).float()
            out[row] += w * (w2[e].float() @ act)
    hidden_states.copy_(out)
    return hidden_states
"""

TOPK = """\
from typing import NamedTuple

import torch


class StandardTopKOutput(NamedTuple):
    topk_weights: torch.Tensor
    topk_ids: torch.Tensor
    router_logits: torch.Tensor
"""

RUNNER = """\
from dataclasses import dataclass


@dataclass
class MoeRunnerConfig:
    num_experts: int = None
    num_local_experts: int = None
    inplace: bool = True
"""

SERVER = """\
from dataclasses import dataclass

_args = None


@dataclass
class ServerArgs:
    model_path: str


def get_global_server_args():
    if _args is None:
        raise ValueError("Global server args is not set yet!")
    return _args


def set_global_server_args_for_scheduler(args):
    global _args
    _args = args
"""


@pytest.fixture
def standins(tmp_path, monkeypatch):
    """An `sglang` stand-in with the MoE modules the adapter imports, on the path of this process and the child."""
    moe = "sglang/srt/layers/moe"
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/server_args.py": SERVER,
        "sglang/srt/layers/__init__.py": "",
        f"{moe}/__init__.py": "",
        f"{moe}/topk.py": TOPK,
        f"{moe}/fused_moe_triton/__init__.py": FUSED,
        f"{moe}/moe_runner/__init__.py": "",
        f"{moe}/moe_runner/base.py": RUNNER,
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{ROOT / 'libs' / 'hotfloat'}")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.split(".")[0] == "sglang"]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    return tmp_path


@pytest.mark.parametrize(
    "example,stock",
    [("moe_triton", "sglang-triton"), ("moe_reduce_triton", "sglang-triton+all_reduce")],
)
def test_sglang_fused_moe_passes_every_check_beside_the_example(standins, example, stock):
    r = run_bench(str(ROOT / "examples" / example), Options(device="cpu", stock=("sglang",)))
    assert r.status == "PASS" and r.skipped == []
    (row,) = r.rows
    assert [i.name for i in row.impls] == ["ours:default", stock]
    assert all(i.check == "PASS" for i in row.impls), [i.reason for i in row.impls]
    assert set(row.ratio) == {stock}
    bound = get_slot(row.slot).bytes_moved(row.dims, DTYPES[row.dtype].itemsize)
    assert 0 < row.bytes < bound  # the roofline counts the experts the sets' routing reached: one is always cold


def test_the_adapter_gives_a_process_without_a_server_sglangs_defaults_and_writes_over_x(standins):
    [s], skipped = stock_kernels("moe.fused_experts", ("sglang", "flashinfer"))
    assert skipped == {} and s.overwrites == ("x",)
    slot = get_slot("moe.fused_experts")
    t = slot.make_inputs({"T": 6, "H": 64, "I": 32, "E": 5, "K": 2}, torch.float32, torch.Generator().manual_seed(1))
    x = t["x"].clone()
    out = s.fn(t)
    assert out is t["x"] and not torch.equal(t["x"], x)
    assert torch.allclose(out, slot.reference(t | {"x": x})["out"], atol=1e-5)


def test_a_payload_that_cannot_load_skips_both_rows_with_the_reason(standins):
    (standins / "sglang/srt/layers/moe/fused_moe_triton/__init__.py").write_text("raise ImportError('no libcuda')\n")
    for slot in ("moe.fused_experts", "moe.fused_experts_reduce"):
        found, skipped = stock_kernels(slot, ("sglang",))
        assert found == [] and skipped == {"sglang": "import failed: ImportError: no libcuda"}
