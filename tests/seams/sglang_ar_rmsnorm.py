"""Runs in the engine venv as one of two ranks: SGLang's own tensor-parallel groups on gloo (CPU), the hotfloat plugin
loaded through SGLang's plugin loader, and SGLang's RMSNorm.forward_with_allreduce_fusion called as its
LayerCommunicator calls it once the layer skipped its all-reduce.

Prints one JSON line: per case whether (out, residual_out) are within the slot's tolerance of the fp32 reference of
both ranks' partials and the inputs were left alone, what a call the seam leaves to SGLang did (its FlashInfer op has
no CPU kernel, so it raises here), and the router's counts.
"""

import json
import sys

import torch
from sglang.srt.plugins import load_plugins

load_plugins()

from sglang.srt.distributed import parallel_state as ps  # noqa: E402  (imported after the plugin patched SGLang)
from sglang.srt.layers.layernorm import RMSNorm  # noqa: E402
from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler  # noqa: E402

from hotfloat.slots import get_slot  # noqa: E402
from hotfloat.slots.collective import stack_ranks  # noqa: E402
from hotfloat_sglang.seams.ar_rmsnorm import SLOT  # noqa: E402
from hotfloat_sglang.plugin import router  # noqa: E402

rank, init = int(sys.argv[1]), sys.argv[2]
set_global_server_args_for_scheduler(ServerArgs(model_path="dummy"))  # SGLang's layers read it when built
_group = ps.init_model_parallel_group
ps.init_model_parallel_group = lambda *a, **k: _group(*a, **{**k, "use_pynccl": False})  # PyNccl needs a GPU
ps.init_distributed_environment(world_size=2, rank=rank, distributed_init_method=init, local_rank=rank, backend="gloo")
ps.initialize_model_parallel(tensor_model_parallel_size=2)
slot = get_slot(SLOT)
H = 256


def case(dtype: str, use_attn_tp_group: bool) -> dict:
    """One fused call on this rank's partial; every rank draws both ranks' inputs to know the reference."""
    draws = [
        slot.make_inputs({"T": 6, "H": H}, getattr(torch, dtype), torch.Generator().manual_seed(r)) for r in (0, 1)
    ]
    ranks = [r | {n: draws[0][n] for n in slot.replicated} | {"eps": 1e-5} for r in draws]
    ranked = stack_ranks(slot, ranks)
    want = slot.reference(ranked)
    scale, tol = slot.rounding_scale(ranked, want), slot.tolerances["bf16" if dtype == "bfloat16" else "fp32"]
    norm = RMSNorm(H, eps=1e-5).to(getattr(torch, dtype))
    norm.weight.data.copy_(ranks[0]["weight"])
    x, residual = ranks[rank]["x"].clone(), ranks[rank]["residual"].clone()
    with torch.inference_mode():
        out, residual_out = norm.forward_with_allreduce_fusion(x, residual, use_attn_tp_group=use_attn_tp_group)
    got = {"out": out, "residual_out": residual_out}
    return {
        "matches": all(bool(((got[k].float() - want[k]).abs() <= tol.atol + tol.rtol * scale[k]).all()) for k in want),
        "untouched": torch.equal(x, ranks[rank]["x"]) and torch.equal(residual, ranks[rank]["residual"]),
    }


report = {"attention group, bf16": case("bfloat16", True), "moe group, fp32": case("float32", False)}
norm = RMSNorm(H).to(torch.bfloat16)
strided = torch.zeros(H, 4, dtype=torch.bfloat16).t()  # a view SGLang's FlashInfer path would not fuse either
try:
    with torch.inference_mode():
        norm.forward_with_allreduce_fusion(strided, torch.zeros(4, H, dtype=torch.bfloat16))
    report["strided"] = "returned"
except NotImplementedError as e:
    report["strided"] = f"SGLang's op raised: {str(e).splitlines()[0][:80]}"
count = router().counts()[SLOT]
report["counts"] = [count.routed, count.stock]
print(json.dumps(report))
