"""The MoE slots' stock kernel: SGLang's triton fused_moe, called as its triton MoE runner calls it for an unquantized
layer, and for the reduce slot the same followed by the all-reduce SGLang runs after the layer.

`fused_experts(hidden_states, w1, w2, topk_output, moe_runner_config)` with the layer's expert counts and SGLang's
defaults: in place (it writes the result over the hidden states, so every timed call gets its own copy of x), the
tuned kernel configs it ships for the GPU (E=8, N=1792 on the H100 and H200: the mixtral-8b preset's layer). It reads
SGLang's global server args for two switches; a bench child that has none gets the defaults, as a server would.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import replace

from .stock_records import Stock

REDUCES = {"moe.fused_experts_reduce": "moe.fused_experts"}
"""Slot that owns its all-reduce -> the slot whose stock kernels run before SGLang's all-reduce of their output."""


def sglang_fused_moe() -> Stock | str:
    """SGLang's triton fused_experts as a Stock, or why it cannot run here."""
    if importlib.util.find_spec("sglang") is None:
        return "not installed"
    try:
        fused = importlib.import_module("sglang.srt.layers.moe.fused_moe_triton").fused_experts
        topk_output = importlib.import_module("sglang.srt.layers.moe.topk").StandardTopKOutput
        config = importlib.import_module("sglang.srt.layers.moe.moe_runner.base").MoeRunnerConfig
        server = importlib.import_module("sglang.srt.server_args")
    except Exception as e:  # a payload that cannot load here (no libcuda, ABI mismatch) is skipped
        return f"import failed: {type(e).__name__}: {e}"[:300]
    try:
        server.get_global_server_args()
    except ValueError:  # no server in this process: its defaults
        server.set_global_server_args_for_scheduler(server.ServerArgs(model_path="dummy"))

    def call(t):
        experts = t["w13"].shape[0]
        routed = topk_output(t["topk_weights"], t["topk_ids"], None)
        runner = config(num_experts=experts, num_local_experts=experts, inplace=True)
        return fused(t["x"], t["w13"], t["w2"], routed, runner)

    return Stock("sglang-triton", call, overwrites=("x",), probe=True)


def then_all_reduce(stock: Stock) -> Stock:
    """`stock` followed by an in-place all-reduce of its output on the call's group, as
    `tensor_model_parallel_all_reduce` after the layer."""
    import torch.distributed as dist

    def fn(t):
        out = stock.fn(t)
        dist.all_reduce(out, group=t["group"])
        return out

    return replace(stock, name=f"{stock.name}+all_reduce", fn=fn)
