"""Model shapes the validator generates random-weight models from (no torch here: the CLI and the services read
them without loading an engine)."""

from __future__ import annotations

PRESETS: dict[str, dict] = {
    "tiny": dict(
        arch="qwen2",
        vocab_size=512,
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        initializer_range=0.1,
    ),
    "tiny-llama": dict(
        arch="llama",
        vocab_size=512,
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        initializer_range=0.1,
    ),
    "qwen2-0.5b": dict(
        arch="qwen2",
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        initializer_range=0.02,
    ),
    "qwen2-1.5b": dict(
        arch="qwen2",
        vocab_size=151936,
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        tie_word_embeddings=True,
        initializer_range=0.02,
    ),
    "llama-0.5b": dict(
        arch="llama",
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=24,
        num_attention_heads=16,
        num_key_value_heads=4,
        tie_word_embeddings=False,
        initializer_range=0.02,
    ),
    "llama-8b": dict(
        arch="llama",
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        tie_word_embeddings=False,
        initializer_range=0.02,
    ),
    "mixtral-8b": dict(
        arch="mixtral",
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=1792,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        num_local_experts=8,
        num_experts_per_tok=2,
        tie_word_embeddings=False,
        initializer_range=0.02,
    ),
}
"""Model shapes: the tiny ones for CPU CI, the Qwen2-0.5B/1.5B shapes and Llama-style ones for the GPU (llama-8b:
the Llama-3-8B shape with a 32k vocabulary, big enough that a decode step is bound by the GPU, not by the
scheduler's Python; mixtral-8b: the same layers with the MLP cut into 8 experts of 1792, 2 routed per token, so it
holds llama-8b's weights (about 7.2B parameters, 13.5 GiB in bf16) and a decode step reads all of them while a token
computes a quarter of the MLP, the MoE slots' qualification model; SGLang 0.5.13 serves it as MixtralForCausalLM, and
its fused_moe ships tuned configs for this layer, E=8 N=1792, on the H100 and H200)."""
