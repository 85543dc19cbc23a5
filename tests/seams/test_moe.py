"""The SGLang MoE seam: FusedMoE.forward_impl routed as moe.fused_experts, or moe.fused_experts_reduce when the layer
owns its all-reduce. In the engine venv (sglang_moe.py): SGLang's own FusedMoE on CPU, the plugin loaded by SGLang's
loader, the plain layer routed to the armed torch bundle and equal to SGLang's own forward, a routed-scaling layer and
int64 ids left to SGLang and counted stock. In the test venv (SGLang stood in for): the reduce path hands the armed op
the tensor-parallel group's device group, every variant the plain check refuses goes stock, the check reads only the
MoeRunnerConfig fields compat checks, and the hook's parameters are compat's row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import pytest
import torch
import torch.distributed as dist

from hotfloat.compat import engine_python
from hotfloat.seams import arm
from hotfloat.slots import get_slot

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams import moe as seam  # noqa: E402

BUNDLE = HERE / "fixtures" / "moe_torch"
SLOT = get_slot(seam.SLOT)
DIMS = {"T": 5, "H": 32, "I": 16, "E": 4, "K": 2}


class StandardTopKOutput(NamedTuple):
    topk_weights: torch.Tensor
    topk_ids: torch.Tensor
    router_logits: torch.Tensor | None


class UnquantizedFusedMoEMethod:
    runner = SimpleNamespace(runner_backend=SimpleNamespace(is_triton=lambda: True))
    use_flashinfer_cutlass = False
    _aiter_runner = None


class StandardDispatcher:
    pass


def _layer(t: dict, **changes) -> SimpleNamespace:
    """What the seam reads of a FusedMoE; the config holds exactly the fields compat checks."""
    config = SimpleNamespace(**{f: None for f in seam.CONFIG_FIELDS})
    config.activation, config.is_gated, config.apply_router_weight_on_input, config.no_combine = "silu", True, 0, 0
    for name in list(changes):
        if name in seam.CONFIG_FIELDS:
            setattr(config, name, changes.pop(name))
    fields = {
        "quant_method": UnquantizedFusedMoEMethod(),
        "moe_runner_config": config,
        "dispatcher": StandardDispatcher(),
        "moe_ep_size": 1,
        "moe_tp_size": 1,
        "reduce_results": False,
        "num_fused_shared_experts": 0,
        "w13_weight": t["w13"],
        "w2_weight": t["w2"],
    }
    return SimpleNamespace(**fields | changes)


def _call(router, layer, t, group=None):
    """The hooked forward_impl on the slot's inputs; returns (output, whether SGLang's own ran)."""
    ran = []

    def forward_impl(layer, hidden_states, topk_output):
        ran.append(True)
        return torch.zeros_like(hidden_states)

    hook = seam.hook(router, group=group or (lambda: SimpleNamespace(device_group=dist.group.WORLD)))
    out = hook(forward_impl, layer, t["x"], StandardTopKOutput(t["topk_weights"], t["topk_ids"], None))
    return out, bool(ran)


@pytest.fixture(scope="module")
def one_rank():
    dist.init_process_group("gloo", init_method=f"file://{os.environ['TMPDIR']}/moe-seam-rdv", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_plain_layer_goes_to_the_bundle_and_every_variant_stays_stock():
    router = arm(BUNDLE)
    t = SLOT.make_inputs(DIMS, torch.float32, torch.Generator().manual_seed(3))
    out, ran = _call(router, _layer(t), t)
    assert not ran and torch.allclose(out, SLOT.reference(t)["out"], atol=1e-5)
    variants = [
        {"routed_scaling_factor": 2.5},
        {"activation": "gelu"},
        {"gemm1_clamp_limit": 7.0},
        {"apply_router_weight_on_input": True},
        {"moe_ep_size": 2},
        {"num_fused_shared_experts": 1},
        {"w13_weight_bias": torch.zeros(1)},
        {"quant_method": SimpleNamespace(runner=UnquantizedFusedMoEMethod.runner)},
    ]
    for change in variants:
        assert _call(router, _layer(t, **change), t)[1], change
    assert router.counts()[seam.SLOT].routed == 1 and router.counts()[seam.SLOT].stock == len(variants)


def test_a_layer_that_owns_its_all_reduce_is_the_reduce_slot_on_the_tensor_parallel_group(one_rank):
    router = arm(BUNDLE)
    t = SLOT.make_inputs(DIMS, torch.float32, torch.Generator().manual_seed(4))
    asked = []

    def group():
        asked.append(True)
        return SimpleNamespace(device_group=dist.group.WORLD)

    out, ran = _call(router, _layer(t, reduce_results=True, moe_tp_size=2), t, group)
    assert not ran and asked and torch.allclose(out, SLOT.reference(t)["out"], atol=1e-5)  # one rank: its own sum
    assert router.counts()[seam.REDUCE_SLOT].routed == 1 and router.counts()[seam.SLOT].routed == 0
    null = arm(None)
    assert _call(null, _layer(t, reduce_results=True, moe_tp_size=2), t, group)[1]
    assert null.counts()[seam.REDUCE_SLOT].stock == 1


def test_hook_parameters_are_compats_row():
    row = next(r for r in seam.SEAMS[0].checks if r["name"] == "FusedMoE.forward_impl")
    assert row["target"] == seam.TARGET and row["params"] == seam.PARAMS


def test_sglangs_own_fused_moe_is_routed_in_the_engine_venv():
    python = engine_python()
    assert Path(python).exists(), f"{python} missing: `make engine` builds the engine venv (make test does)"
    env = {
        **os.environ,
        "HOTFLOAT_SEAMS": "1",
        "SGLANG_PLUGINS": "hotfloat",
        "HOTFLOAT_ARMED_BUNDLE": str(BUNDLE),
        "PYTHONWARNINGS": "ignore",
    }
    p = subprocess.run([python, str(HERE / "sglang_moe.py")], env=env, capture_output=True, text=True, timeout=540)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    tol = SLOT.tolerances["bf16"].atol
    assert r["plain fp32"]["diff"] < 1e-5 and r["plain bf16"]["diff"] < 4 * tol
    assert r["routed scaling"]["diff"] == 0 and r["int64 ids"]["diff"] == 0
    assert all(c["untouched"] for k, c in r.items() if k != "counts")
    assert r["counts"] == {seam.SLOT: [2, 2], seam.REDUCE_SLOT: [0, 0]}
