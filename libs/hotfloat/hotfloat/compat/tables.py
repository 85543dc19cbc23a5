"""What the engine layer relies on in its pinned SGLang, as probe checks (data, not code); the chain layer's table is
chain_table.py.

Each row names a symbol hotfloat hooks or calls and the parameters it passes; an upgrade that renames or reorders
them fails here, before a validator arms a bundle against a seam that no longer exists.
"""

SGLANG_PIN = "0.5.13.post1"

_ACT = "sglang.srt.layers.activation.SiluAndMul"
_NORM = "sglang.srt.layers.layernorm.RMSNorm"
_MOE = "sglang.srt.layers.moe.fused_moe_triton"
_TRITON = "sglang.srt.layers.attention.triton_backend.TritonAttnBackend"
MOE_CONFIG_FIELDS = (
    "activation is_gated apply_router_weight_on_input no_combine routed_scaling_factor gemm1_alpha gemm1_clamp_limit "
    "swiglu_limit"
).split()
"""The MoeRunnerConfig fields the MoE seam reads to tell a plain layer (hotfloat_sglang.moe keeps the same list)."""

SGLANG: list[dict] = [
    {"name": "sglang version", "kind": "version", "dist": "sglang", "pin": SGLANG_PIN},
    {
        "name": "SiluAndMul.forward_cuda",
        "kind": "callable",
        "target": f"{_ACT}.forward_cuda",
        "params": ["self", "x"],
        "order": True,
    },
    {
        "name": "SiluAndMul.forward_native",
        "kind": "callable",
        "target": f"{_ACT}.forward_native",
        "params": ["self", "x"],
        "order": True,
    },
    {
        "name": "RMSNorm.forward_cuda",
        "kind": "callable",
        "target": f"{_NORM}.forward_cuda",
        "params": ["self", "x", "residual", "post_residual_addition"],
        "order": True,
    },
    {
        "name": "RMSNorm.forward_native",
        "kind": "callable",
        "target": f"{_NORM}.forward_native",
        "params": ["self", "x", "residual", "post_residual_addition"],
        "order": True,
    },
    {
        "name": "RMSNorm.__init__",
        "kind": "callable",
        "target": f"{_NORM}.__init__",
        "params": [
            "hidden_size",
            "eps",
            "var_hidden_size",
            "cast_x_before_out_mul",
            "fp32_residual",
            "has_weight",
            "override_orig_dtype",
        ],
    },
    {
        "name": "RadixAttention.forward",
        "kind": "callable",
        "target": "sglang.srt.layers.radix_attention.RadixAttention.forward",
        "params": ["self", "q", "k", "v", "forward_batch"],
        "order": True,
    },
    {
        "name": "TritonAttnBackend.__init__",
        "kind": "callable",
        "target": "sglang.srt.layers.attention.triton_backend.TritonAttnBackend.__init__",
        "params": ["self", "model_runner"],
        "order": True,
    },
    {
        "name": "decode_attention_fwd",
        "kind": "callable",
        "target": "sglang.srt.layers.attention.triton_ops.decode_attention.decode_attention_fwd",
        "params": (
            "q k_buffer v_buffer o kv_indptr kv_indices attn_logits attn_lse num_kv_splits max_kv_splits sm_scale "
            "k_scale v_scale logit_cap sinks xai_temperature_len has_mla use_pdl"
        ).split(),
        "order": True,
    },
    {
        "name": "extend_attention_fwd",
        "kind": "callable",
        "target": "sglang.srt.layers.attention.triton_ops.extend_attention.extend_attention_fwd",
        "params": (
            "q_extend k_extend v_extend o_extend k_buffer v_buffer qo_indptr kv_indptr kv_indices custom_mask is_causal "
            "mask_indptr max_len_extend k_scale v_scale sm_scale logit_cap skip_prefix_custom_mask sliding_window_size "
            "sinks window_kv_offsets xai_temperature_len"
        ).split(),
        "order": True,
    },
    {
        "name": "TritonAttnBackend index buffers (attention.decode, attention.prefill take them as allocated)",
        "kind": "dtypes",
        "target": f"{_TRITON}.__init__",
        "dtypes": {"self.qo_indptr": "torch.int64", "self.kv_indptr": "torch.int32"},
    },
    {
        "name": "TritonAttnBackend page table (eager)",
        "kind": "dtypes",
        "target": f"{_TRITON}.init_forward_metadata",
        "dtypes": {"kv_indices": "torch.int64"},
    },
    {
        "name": "TritonAttnBackend page table (CUDA graphs)",
        "kind": "dtypes",
        "target": f"{_TRITON}.init_cuda_graph_state",
        "dtypes": {"self.cuda_graph_kv_indices": "torch.int64"},
    },
    {
        "name": "FusedMoE.forward_impl",
        "kind": "callable",
        "target": f"{_MOE}.layer.FusedMoE.forward_impl",
        "params": ["self", "hidden_states", "topk_output"],
        "order": True,
    },
    {
        "name": "FusedMoE.__init__ (what the MoE seam's plain check reads)",
        "kind": "callable",
        "target": f"{_MOE}.layer.FusedMoE.__init__",
        "params": (
            "num_experts hidden_size intermediate_size top_k num_fused_shared_experts reduce_results activation "
            "apply_router_weight_on_input routed_scaling_factor gemm1_alpha gemm1_clamp_limit swiglu_limit with_bias "
            "is_gated"
        ).split(),
    },
    {
        "name": "MoeRunnerConfig fields",
        "kind": "fields",
        "target": "sglang.srt.layers.moe.moe_runner.base.MoeRunnerConfig",
        "fields": [*"num_experts num_local_experts inplace".split(), *MOE_CONFIG_FIELDS],
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
    {
        "name": "fused_experts (the bench's stock MoE)",
        "kind": "callable",
        "target": f"{_MOE}.fused_experts",
        "params": ["hidden_states", "w1", "w2", "topk_output", "moe_runner_config"],
        "order": True,
    },
    {"name": "get_tp_group", "kind": "attrs", "target": "sglang.srt.distributed", "attrs": ["get_tp_group"]},
    {
        "name": "GroupCoordinator.all_reduce",
        "kind": "callable",
        "target": "sglang.srt.distributed.parallel_state.GroupCoordinator.all_reduce",
        "params": ["self", "input_"],
        "order": True,
    },
    {
        "name": "GroupCoordinator.cpu_group",
        "kind": "fields",
        "target": "sglang.srt.distributed.parallel_state.GroupCoordinator",
        "fields": ["cpu_group", "device_group", "world_size", "rank_in_group"],
    },
    {
        "name": "flashinfer_allreduce_residual_rmsnorm",
        "kind": "callable",
        "target": "sglang.srt.layers.flashinfer_comm_fusion.flashinfer_allreduce_residual_rmsnorm",
        "params": (
            "input_tensor residual weight eps max_token_num use_oneshot trigger_completion_at_end fp32_acc "
            "use_attn_tp_group"
        ).split(),
        "order": True,
    },
    {
        "name": "fusion group getters",
        "kind": "attrs",
        "target": "sglang.srt.distributed",
        "attrs": ["get_attn_tp_group", "get_moe_ep_group", "get_moe_tp_group", "get_moe_expert_parallel_world_size"],
    },
    {
        "name": "get_world_group",
        "kind": "callable",
        "target": "sglang.srt.distributed.parallel_state.get_world_group",
        "params": [],
    },
    {
        "name": "initialize_model_parallel",
        "kind": "callable",
        "target": "sglang.srt.distributed.parallel_state.initialize_model_parallel",
        "params": ["tensor_model_parallel_size", "pipeline_model_parallel_size"],
    },
    {"name": "plugins.load_plugins", "kind": "callable", "target": "sglang.srt.plugins.load_plugins", "params": []},
    {
        "name": "plugins.GENERAL_PLUGINS_GROUP",
        "kind": "attrs",
        "target": "sglang.srt.plugins",
        "attrs": ["GENERAL_PLUGINS_GROUP"],
    },
    {
        "name": "HookRegistry.register",
        "kind": "callable",
        "target": "sglang.srt.plugins.hook_registry.HookRegistry.register",
        "params": ["target", "hook", "hook_type"],
        "order": True,
    },
    {
        "name": "HookRegistry.apply_hooks",
        "kind": "attrs",
        "target": "sglang.srt.plugins.hook_registry.HookRegistry",
        "attrs": ["apply_hooks", "_patched"],
    },
    {
        "name": "HookType",
        "kind": "attrs",
        "target": "sglang.srt.plugins.hook_registry.HookType",
        "attrs": ["AROUND", "AFTER"],
    },
    {
        "name": "Engine.__init__",
        "kind": "callable",
        "target": "sglang.srt.entrypoints.engine.Engine.__init__",
        "params": ["self", "kwargs"],
    },
    {
        "name": "Engine.generate",
        "kind": "callable",
        "target": "sglang.srt.entrypoints.engine.Engine.generate",
        "params": ["self", "prompt", "sampling_params", "input_ids"],
        "order": True,
    },
    {
        "name": "Engine.shutdown",
        "kind": "callable",
        "target": "sglang.srt.entrypoints.engine.Engine.shutdown",
        "params": ["self"],
    },
    {
        "name": "ServerArgs fields",
        "kind": "fields",
        "target": "sglang.srt.server_args.ServerArgs",
        "fields": [
            "model_path",
            "tp_size",
            "dtype",
            "random_seed",
            "host",
            "port",
            "mem_fraction_static",
            "disable_cuda_graph",
            "attention_backend",
            "sampling_backend",
            "skip_server_warmup",
            "log_level",
            "skip_tokenizer_init",
            "grammar_backend",
            "disable_radix_cache",
            "cuda_graph_max_bs",
            "disable_piecewise_cuda_graph",
            "max_total_tokens",
            "cuda_graph_bs",
            "sleep_on_idle",
            "enable_fp32_lm_head",
        ],
    },
    {
        "name": "Engine.freeze_gc",
        "kind": "callable",
        "target": "sglang.srt.entrypoints.engine.Engine.freeze_gc",
        "params": ["self"],
    },
    {
        "name": "SchedulerInitResult (the KV pool built, in the engine identity)",
        "kind": "fields",
        "target": "sglang.srt.entrypoints.engine.SchedulerInitResult",
        "fields": ["scheduler_infos"],
    },
]
