"""Runs in the engine venv: SGLang's own FusedMoE on CPU (one gloo rank, its triton runner configured, its CPU
forward being torch), the hotfloat plugin loaded through SGLang's plugin loader and armed from the environment.

Prints one JSON line: per case the largest difference between the hooked layer's output and SGLang's original
forward_impl on the same inputs, whether the inputs were left alone, and the router's counts per MoE slot.
"""

import json

import torch
from sglang.srt.plugins import load_plugins

load_plugins()

from sglang.srt.distributed import parallel_state as ps  # noqa: E402  (imported after the plugin patched SGLang)
from sglang.srt.layers.moe import initialize_moe_config  # noqa: E402
from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE  # noqa: E402
from sglang.srt.layers.moe.topk import StandardTopKOutput  # noqa: E402
from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler  # noqa: E402

from hotfloat.slots import get_slot  # noqa: E402
from hotfloat_sglang.seams.moe import REDUCE_SLOT, SLOT  # noqa: E402
from hotfloat_sglang.plugin import router  # noqa: E402

args = ServerArgs(model_path="dummy")
set_global_server_args_for_scheduler(args)  # SGLang's layers read it when built
_group = ps.init_model_parallel_group
ps.init_model_parallel_group = lambda *a, **k: _group(*a, **{**k, "use_pynccl": False})  # PyNccl needs a GPU
ps.init_distributed_environment(world_size=1, rank=0, distributed_init_method="tcp://127.0.0.1:0", backend="gloo")
ps.initialize_model_parallel(tensor_model_parallel_size=1)
initialize_moe_config(args)
slot = get_slot(SLOT)
DIMS = {"T": 7, "H": 64, "I": 32, "E": 6, "K": 2}


def case(dtype: torch.dtype, ids_dtype=torch.int32, **layer_args) -> dict:
    """One forward_impl through the hooked layer and through SGLang's original, on the slot's own inputs."""
    t = slot.make_inputs(DIMS, dtype, torch.Generator().manual_seed(len(layer_args)))
    layer = FusedMoE(
        num_experts=DIMS["E"],
        hidden_size=DIMS["H"],
        intermediate_size=DIMS["I"],
        layer_id=0,
        top_k=DIMS["K"],
        params_dtype=dtype,
        **layer_args,
    )
    layer.w13_weight.data.copy_(t["w13"])
    layer.w2_weight.data.copy_(t["w2"])
    topk = StandardTopKOutput(t["topk_weights"], t["topk_ids"].to(ids_dtype), None)
    x = t["x"].clone()
    with torch.inference_mode():
        hooked = layer.forward_impl(x, topk)
        original = FusedMoE.forward_impl.__wrapped__(layer, x.clone(), topk)
    return {"diff": float((hooked.float() - original.float()).abs().max()), "untouched": torch.equal(x, t["x"])}


report = {
    "plain fp32": case(torch.float32),
    "plain bf16": case(torch.bfloat16),
    "routed scaling": case(torch.float32, routed_scaling_factor=2.5),
    "int64 ids": case(torch.float32, ids_dtype=torch.int64),
}
counts = router().counts()
report["counts"] = {s: [counts[s].routed, counts[s].stock] for s in (SLOT, REDUCE_SLOT)}
print(json.dumps(report))
