"""The validator-owned checkpoint: generated once per (preset, dtype, seed) by a trusted child process, cached, with
a sharpened final norm so greedy choices are clear."""

import json

from hotfloat.qualify.checkpoint import FINAL_NORM_SCALE, ensure, write


def test_generated_once_cached_and_sharpened(tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file

    monkeypatch.setenv("HOTFLOAT_MODEL_CACHE", str(tmp_path))
    out = ensure("tiny", "fp32", 0)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForCausalLM"] and config["hidden_size"] == 64
    weights = load_file(str(next(out.glob("*.safetensors"))))
    final, layer = weights["model.norm.weight"], weights["model.layers.0.input_layernorm.weight"]
    assert abs(final.mean().item() - FINAL_NORM_SCALE) < 0.5 and abs(layer.mean().item() - 1.0) < 0.1
    assert not torch.equal(layer, torch.ones_like(layer))  # the norms do real work
    stamp = (out / "done").stat().st_mtime_ns
    assert ensure("tiny", "fp32", 0) == out and (out / "done").stat().st_mtime_ns == stamp  # cached, not rewritten
    assert ensure("tiny", "fp32", 1) != out


def test_a_moe_preset_is_written_as_mixtral_and_its_weights_are_what_the_memory_plan_counts(tmp_path, monkeypatch):
    from hotfloat.engine import presets
    from hotfloat.qualify.isolation.memory import _parameters

    small = dict(
        presets.PRESETS["mixtral-8b"], hidden_size=64, intermediate_size=32, num_hidden_layers=2, vocab_size=256
    )
    monkeypatch.setitem(presets.PRESETS, "tiny-mixtral", small)
    out = tmp_path / "m"
    write("tiny-mixtral", "fp32", 0, out)  # in this process: the preset is the test's
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["MixtralForCausalLM"] and config["num_local_experts"] == 8
    weights = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    router = 2 * 8 * 64  # the experts' gates, beside the experts the plan counts
    assert abs(weights - 4 * (_parameters(small) + router)) < 16384  # the safetensors header (80 tensors) differs
