"""The SGLang fused all-reduce + residual + RMSNorm seam on two real gloo ranks. In the test venv (SGLang stood in
for): SGLang's call, with keywords as `_forward_with_allreduce_fusion` makes it, goes to the armed example on the group
SGLang's fusion would use and returns the fp32 reference of both ranks' partials, inputs untouched; a one-rank group,
non-contiguous tensors and a null-armed engine go to SGLang's function, counted stock. In the engine venv
(sglang_ar_rmsnorm.py): the plugin, loaded by SGLang's own loader, routes SGLang's RMSNorm.forward_with_allreduce_fusion
on SGLang's own tensor-parallel groups; the hook's parameters are compat's row for the target."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.compat import engine_python

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams import ar_rmsnorm as seam  # noqa: E402

RANK = """
import json, sys
from types import SimpleNamespace

import torch
import torch.distributed as dist

from hotfloat.seams import arm
from hotfloat.slots import get_slot
from hotfloat.slots.collective import stack_ranks
from hotfloat_sglang.seams import ar_rmsnorm as seam

rank, init, example = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
slot = get_slot(seam.SLOT)
ranks = [slot.make_inputs({"T": 5, "H": 256}, torch.bfloat16, torch.Generator().manual_seed(r)) for r in range(2)]
ranks = [r | {n: ranks[0][n] for n in slot.replicated} | {"eps": 1e-5} for r in ranks]
ranked = stack_ranks(slot, ranks)
want = slot.reference(ranked)
scale = slot.rounding_scale(ranked, want)
tol = slot.tolerances["bf16"]
mine = ranks[rank]
asked, stock_calls = [], []


def coordinator(world):
    def pick(use_attn_tp_group):
        asked.append(use_attn_tp_group)
        return SimpleNamespace(world_size=world, device_group=dist.group.WORLD)

    return pick


def sglang(*args):
    stock_calls.append(len(args))
    return "sglang's", "pair"


def call(router, world=2, x=None, use_attn_tp_group=False):
    x = mine["x"] if x is None else x
    fn = seam.hook(router, coordinator(world))
    return fn(sglang, input_tensor=x, residual=mine["residual"], weight=mine["weight"], eps=1e-5,
              max_token_num=2048, use_attn_tp_group=use_attn_tp_group)


armed = arm(example)
before = [t.clone() for t in (mine["x"], mine["residual"], mine["weight"])]
out, residual_out = call(armed)
got = {"out": out, "residual_out": residual_out}
report = {
    "matches": all(bool(((got[k].float() - want[k]).abs() <= tol.atol + tol.rtol * scale[k]).all()) for k in want),
    "untouched": all(torch.equal(a, b) for a, b in zip(before, (mine["x"], mine["residual"], mine["weight"]))),
    "asked": list(asked),
    "one_rank": call(armed, world=1),
    "strided": call(armed, x=mine["x"].t().contiguous().t()),
    "null_armed": call(arm(None), use_attn_tp_group=True),
    "stock_calls": stock_calls,
    "counts": [armed.counts()[seam.SLOT].routed, armed.counts()[seam.SLOT].stock],
}
dist.destroy_process_group()
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    init = f"file://{tmp_path_factory.mktemp('store')}/store"
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO / "libs" / "hotfloat_sglang")}
    example = str(REPO / "examples" / "ar_rmsnorm_triton")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RANK, str(r), init, example],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for r in range(2)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-2000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def test_sglangs_call_runs_the_armed_kernel_on_the_fusion_group(ranks):
    for r in ranks:
        assert r["matches"] and r["untouched"]
        assert r["asked"][0] is False, "the group is the one SGLang's fusion picks for use_attn_tp_group"


def test_one_rank_strided_and_null_armed_calls_are_sglangs(ranks):
    for r in ranks:
        assert r["one_rank"] == r["strided"] == r["null_armed"] == ["sglang's", "pair"]
        assert r["stock_calls"] == [9, 9, 9], "SGLang's function gets all nine of its arguments back"
        assert r["counts"] == [1, 2]


def test_the_hook_takes_the_pinned_parameters():
    params = list(inspect.signature(seam.hook(None)).parameters)
    assert params == ["original", *seam.PARAMS]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """Both ranks in the engine venv, armed with the example through the environment as in serving."""
    python = engine_python()
    assert Path(python).exists(), f"{python} missing: `make engine` builds the engine venv (make test does)"
    init = f"file://{tmp_path_factory.mktemp('engine')}/store"
    env = {
        **os.environ,
        "HOTFLOAT_SEAMS": "1",
        "SGLANG_PLUGINS": "hotfloat",
        "HOTFLOAT_ARMED_BUNDLE": str(REPO / "examples" / "ar_rmsnorm_triton"),
        "TRITON_INTERPRET": "1",
        "PYTHONWARNINGS": "ignore",
    }
    script = str(Path(__file__).with_name("sglang_ar_rmsnorm.py"))
    procs = [
        subprocess.Popen(
            [python, script, str(r), init], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        for r in range(2)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=540)
        assert p.returncode == 0, stderr[-2000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def test_sglangs_own_fused_norm_runs_the_armed_kernel_on_its_tp_groups(engine):
    for r in engine:
        for name in ("attention group, bf16", "moe group, fp32"):
            assert r[name] == {"matches": True, "untouched": True}, name
        assert r["strided"].startswith("SGLang's op raised: Could not run 'sglang::flashinfer_allreduce_residual")
        assert r["counts"] == [2, 1]


def test_the_seam_target_and_parameters_are_the_compat_row():
    [row] = [r for r in seam.SEAMS[0].checks if r.get("target") == seam.TARGET]
    assert row["params"] == seam.PARAMS and row["order"]
