"""The MoE qualification preset: llama-8b's layers with the MLP cut into 8 experts (so the same weights and the same
engine memory), three engines to an 80 GB H100, and a config transformers builds into the per-expert checkpoint
layout SGLang's Mixtral loader reads."""

from hotfloat.qualify.isolation.memory import GiB, need_bytes, plan
from hotfloat.engine.presets import PRESETS
from hotfloat.qualify.workload import kv_cap, make_workload
from hotfloat.slots import get_slot

MOE = PRESETS["mixtral-8b"]
H100_BYTES = 81559 << 20
"""An H100 80GB HBM3's memory as NVML reports it."""


def test_mixtral_8b_holds_llama_8bs_weights_split_into_experts():
    dense = PRESETS["llama-8b"]
    assert (
        MOE["arch"] == "mixtral" and MOE["num_local_experts"] * MOE["intermediate_size"] == dense["intermediate_size"]
    )
    assert {
        k: v
        for k, v in MOE.items()
        if k not in ("arch", "intermediate_size", "num_local_experts", "num_experts_per_tok")
    } == {k: v for k, v in dense.items() if k not in ("arch", "intermediate_size")}
    layer = {
        "H": MOE["hidden_size"],
        "I": MOE["intermediate_size"],
        "E": MOE["num_local_experts"],
        "K": MOE["num_experts_per_tok"],
    }
    assert any({k: v for k, v in s.dims.items() if k != "T"} == layer for s in get_slot("moe.fused_experts").shapes)


def test_three_engines_fit_an_80gb_h100_at_about_20_gib_each():
    tokens = kv_cap(make_workload("sglang", MOE["vocab_size"], seed=1))
    need = need_bytes("sglang", "mixtral-8b", "bf16", tokens, None)
    assert need == need_bytes("sglang", "llama-8b", "bf16", tokens, None) and 19 * GiB < need < 23 * GiB
    assert plan("NVIDIA H100 80GB HBM3", H100_BYTES, 0, need, wanted=3, least=3).resident == 3


def test_transformers_builds_it_in_the_per_expert_layout_sglang_loads(tmp_path):
    import transformers
    from safetensors import safe_open

    small = {k: v for k, v in MOE.items() if k != "arch"} | {
        "vocab_size": 64,
        "hidden_size": 32,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    }
    model = transformers.MixtralForCausalLM(transformers.MixtralConfig(**small, max_position_embeddings=128))
    model.save_pretrained(tmp_path)
    with safe_open(str(next(tmp_path.glob("*.safetensors"))), "pt") as f:
        names = set(f.keys())
    experts = "model.layers.0.block_sparse_moe.experts"
    assert {f"{experts}.{e}.w{w}.weight" for e in range(8) for w in (1, 2, 3)} <= names
    assert "model.layers.0.block_sparse_moe.gate.weight" in names
