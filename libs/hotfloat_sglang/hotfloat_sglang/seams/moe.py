"""SGLang's MoE layer, `FusedMoE.forward_impl`, routed as moe.fused_experts, or as moe.fused_experts_reduce when the
layer owns its tensor-parallel all-reduce.

forward_impl(hidden_states, topk_output) dispatches the tokens, runs the quant method's experts (for unquantized
weights the triton runner: SGLang's fused_moe kernel over `w13_weight` [E, 2I, H], gate rows first, and `w2_weight`
[E, H, I]), combines, and all-reduces over the tensor-parallel group when the layer reduces its own results
(`reduce_results` at TP > 1; Mixtral and Qwen-MoE reduce in their own block instead, so their layers are
moe.fused_experts at any TP). Every MoE layer funnels through it, also under SGLang's piecewise graphs (their custom
op calls forward_impl), so an AROUND hook on it reaches them all.

Only the plain layer is the slot: unquantized weights on SGLang's triton runner, a standard top-k output, SwiGLU
(silu, gated) with no bias, clamp, alpha, routed scaling or router weight applied to the input, no fused shared
experts, no expert parallelism, no hidden-size padding. Anything else, and any call outside the armed op's domain,
runs SGLang's forward_impl and is counted stock.
"""

from __future__ import annotations

import torch

from hotfloat.seams import SeamRouter

from ..seam import Seam, callable_check

SLOT = "moe.fused_experts"
REDUCE_SLOT = "moe.fused_experts_reduce"
TARGET = "sglang.srt.layers.moe.fused_moe_triton.layer.FusedMoE.forward_impl"
PARAMS = ["self", "hidden_states", "topk_output"]
"""The target's parameters at the pin, in order (compat checks them)."""
CONFIG_FIELDS = (
    "activation is_gated apply_router_weight_on_input no_combine routed_scaling_factor gemm1_alpha gemm1_clamp_limit "
    "swiglu_limit"
).split()
"""The MoeRunnerConfig fields `plain` reads."""


def tp_group():
    """The GroupCoordinator forward_impl's own all-reduce runs on (tensor_model_parallel_all_reduce's)."""
    from sglang.srt.distributed import get_tp_group

    return get_tp_group()


def plain(layer, hidden_states: torch.Tensor, topk_output) -> bool:
    """Whether the layer computes exactly the slot's math on the call's tensors."""
    method, config = layer.quant_method, layer.moe_runner_config
    runner = getattr(method, "runner", None)
    return (
        type(method).__name__ == "UnquantizedFusedMoEMethod"
        and runner is not None
        and runner.runner_backend.is_triton()
        and not getattr(method, "use_flashinfer_cutlass", False)
        and getattr(method, "_aiter_runner", None) is None
        and type(layer.dispatcher).__name__ == "StandardDispatcher"
        and layer.moe_ep_size == 1
        and layer.num_fused_shared_experts == 0
        and getattr(layer, "w13_weight_bias", None) is None
        and getattr(layer, "down_gemm_overlap_args", None) is None
        and config.activation == "silu"
        and config.is_gated
        and not config.apply_router_weight_on_input
        and not config.no_combine
        and config.routed_scaling_factor in (None, 1.0)
        and config.gemm1_alpha is None
        and config.gemm1_clamp_limit is None
        and config.swiglu_limit is None
        and type(topk_output).__name__ == "StandardTopKOutput"
        and hidden_states.dim() == 2
        and hidden_states.shape[-1] == layer.w13_weight.shape[-1]
    )


def hook(router: SeamRouter, group=tp_group):
    """An AROUND hook for FusedMoE.forward_impl: the plain layers' calls inside the armed domain go to the bundle."""

    def around(original, layer, hidden_states, topk_output):
        def stock(*_):
            return original(layer, hidden_states, topk_output)

        reduces = bool(layer.reduce_results) and layer.moe_tp_size > 1
        slot = REDUCE_SLOT if reduces else SLOT
        if not plain(layer, hidden_states, topk_output):
            router.count_stock(slot)
            return stock()
        args = [hidden_states, topk_output.topk_ids, topk_output.topk_weights, layer.w13_weight, layer.w2_weight]
        return router.call(slot, stock, *args, *([group().device_group] if reduces else []))

    return torch.compiler.disable(around)


SEAMS = (
    Seam(
        slots=(SLOT, REDUCE_SLOT),
        targets=(TARGET,),
        hook=hook,
        checks=(
            callable_check("FusedMoE.forward_impl", TARGET, PARAMS),
            callable_check(
                "FusedMoE.__init__ (what the MoE seam's plain check reads)",
                "sglang.srt.layers.moe.fused_moe_triton.layer.FusedMoE.__init__",
                (
                    "num_experts hidden_size intermediate_size top_k num_fused_shared_experts reduce_results "
                    "activation apply_router_weight_on_input routed_scaling_factor gemm1_alpha gemm1_clamp_limit "
                    "swiglu_limit with_bias is_gated"
                ).split(),
                order=False,
            ),
            {
                "name": "MoeRunnerConfig fields",
                "kind": "fields",
                "target": "sglang.srt.layers.moe.moe_runner.base.MoeRunnerConfig",
                "fields": [*"num_experts num_local_experts inplace".split(), *CONFIG_FIELDS],
            },
            {
                "name": "StandardTopKOutput fields",
                "kind": "fields",
                "target": "sglang.srt.layers.moe.topk.StandardTopKOutput",
                "fields": ["topk_weights", "topk_ids", "router_logits"],
            },
            {
                "name": "MoeRunnerBackend.is_triton",
                "kind": "attrs",
                "target": "sglang.srt.layers.moe.utils.MoeRunnerBackend",
                "attrs": ["is_triton"],
            },
            {"name": "get_tp_group", "kind": "attrs", "target": "sglang.srt.distributed", "attrs": ["get_tp_group"]},
        ),
    ),
)
