"""What the engine layer relies on in its pinned SGLang, as probe checks (data, not code); the chain layer's table is
chain_table.py.

Each row names a symbol hotfloat calls and the parameters it passes; an upgrade that renames or reorders them fails
here, before a validator arms a bundle against a seam that no longer exists. The rows of each seam (its hooked targets,
what its plain-call check reads) are the seam's own (`hotfloat_sglang.seams`): the runner adds them to this table.
"""

SGLANG_PIN = "0.5.13.post1"

SGLANG: list[dict] = [
    {"name": "sglang version", "kind": "version", "dist": "sglang", "pin": SGLANG_PIN},
    {
        "name": "RadixAttention.forward",
        "kind": "callable",
        "target": "sglang.srt.layers.radix_attention.RadixAttention.forward",
        "params": ["self", "q", "k", "v", "forward_batch"],
        "order": True,
    },
    {
        "name": "fused_experts (the bench's stock MoE)",
        "kind": "callable",
        "target": "sglang.srt.layers.moe.fused_moe_triton.fused_experts",
        "params": ["hidden_states", "w1", "w2", "topk_output", "moe_runner_config"],
        "order": True,
    },
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
