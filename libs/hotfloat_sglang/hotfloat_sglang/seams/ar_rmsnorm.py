"""SGLang's fused tensor-parallel epilogue, `flashinfer_allreduce_residual_rmsnorm`, routed as
collective.ar_residual_rmsnorm.

With `enable_flashinfer_allreduce_fusion` (SGLang turns it on itself for the DeepSeek, GLM-4-MoE, gpt-oss and Qwen3
MoE/Next families at tensor parallel > 1 on Hopper and later) a layer's output projection skips its all-reduce, and
the next RMSNorm's `forward_with_allreduce_fusion` hands the rank's partial, the residual stream and the norm weight to
this module function, which returns fresh (norm_out, residual_out). The caller imports it at every call, so an AROUND
hook on the module attribute reaches every layer. The armed op gets the process group SGLang's own fusion would run
on (the attention TP group, or the MoE EP/TP group: `group_of`), as its device group.

Only the plain call is the slot: a group of more than one rank and contiguous tensors, where FlashInfer itself fuses.
Anything else, and any call outside the armed op's domain, runs SGLang's function and is counted stock.
"""

from __future__ import annotations

import torch

from hotfloat.seams import SeamRouter

from ..seam import Seam, callable_check

SLOT = "collective.ar_residual_rmsnorm"
TARGET = "sglang.srt.layers.flashinfer_comm_fusion.flashinfer_allreduce_residual_rmsnorm"
PARAMS = [
    "input_tensor",
    "residual",
    "weight",
    "eps",
    "max_token_num",
    "use_oneshot",
    "trigger_completion_at_end",
    "fp32_acc",
    "use_attn_tp_group",
]
"""The target's parameters at the pin, in order (compat checks them against its registered op schema)."""


def group_of(use_attn_tp_group: bool):
    """The GroupCoordinator SGLang's fusion runs this call on, picked as flashinfer_comm_fusion picks it."""
    from sglang.srt.distributed import (
        get_attn_tp_group,
        get_moe_ep_group,
        get_moe_expert_parallel_world_size,
        get_moe_tp_group,
    )

    if use_attn_tp_group:
        return get_attn_tp_group()
    return get_moe_ep_group() if get_moe_expert_parallel_world_size() > 1 else get_moe_tp_group()


def hook(router: SeamRouter, coordinator=group_of):
    """An AROUND hook for the fused function: the plain calls inside the armed domain go to the bundle."""

    def around(
        original,
        input_tensor,
        residual,
        weight,
        eps=1e-6,
        max_token_num=2048,
        use_oneshot=None,
        trigger_completion_at_end=False,
        fp32_acc=False,
        use_attn_tp_group=True,
    ):
        def stock(*_):
            return original(
                input_tensor,
                residual,
                weight,
                eps,
                max_token_num,
                use_oneshot,
                trigger_completion_at_end,
                fp32_acc,
                use_attn_tp_group,
            )

        group = coordinator(use_attn_tp_group)
        if group.world_size <= 1 or not all(t.is_contiguous() for t in (input_tensor, residual, weight)):
            router.count_stock(SLOT)
            return stock()
        return router.call(SLOT, stock, input_tensor, residual, weight, float(eps), group.device_group)

    return torch.compiler.disable(around)


SEAMS = (
    Seam(
        slots=(SLOT,),
        targets=(TARGET,),
        hook=hook,
        checks=(
            callable_check("flashinfer_allreduce_residual_rmsnorm", TARGET, PARAMS),
            {
                "name": "fusion group getters",
                "kind": "attrs",
                "target": "sglang.srt.distributed",
                "attrs": [
                    "get_attn_tp_group",
                    "get_moe_ep_group",
                    "get_moe_tp_group",
                    "get_moe_expert_parallel_world_size",
                ],
            },
        ),
    ),
)
