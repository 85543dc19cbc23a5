"""Where a qualification's SGLang engine departs from the pinned SGLang's own defaults, and why: the one list.

Each entry names a `ServerArgs` setting, SGLang's default for it at the pin (tests/engine/test_deviations.py reads
them from the engine venv and holds `sglang_engine.settings_for` to this list: a setting that differs from SGLang's
default and is not here fails it) and the reason. The values a qualification uses are in its engine identity
(`engine_info`, in the evidence). Production serving runs SGLang's defaults; every entry here is a difference
between what is timed and what is served.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Deviation:
    setting: str
    stock: Any
    """`ServerArgs`' default for the setting at the pin."""
    why: str
    in_identity: bool = True
    """Whether the setting is part of the engine identity (plumbing that cannot change a forward pass is not)."""


DEVIATIONS = (
    Deviation(
        "attention_backend",
        None,
        "triton (the default) or flashinfer, as the validator names (EngineSpec.attention): the attention slots' "
        "seams hook those two backends. SGLang's own choice is fa3 on Hopper for MHA models, flashinfer elsewhere; a "
        "device call cannot carry FA3's 1 GB library, so flashinfer is the production backend measured here. On the "
        "H100 FlashInfer's prefill kernel is 1.4-3.0x faster than the triton backend's at llama-8b's heads "
        "(docs/benchmarks.md), so a win over triton is not a win over production. Triton stays the default until a "
        "calibration record exists for flashinfer (a record names verdicts of its own configuration only)",
    ),
    Deviation(
        "sampling_backend",
        None,
        "pytorch: greedy decoding with logprobs for the gate; no flashinfer sampling kernels to JIT at boot",
    ),
    Deviation("grammar_backend", None, "none: no request is constrained, and no grammar compiler to load"),
    Deviation(
        "disable_radix_cache",
        False,
        "on: B and C must do the same prefill work on every pass; with the cache a later pass reuses an earlier "
        "one's prefixes and times less of the candidate's attention",
    ),
    Deviation(
        "cuda_graph_bs",
        None,
        "the workload's batch sizes only: SGLang's default list captures graphs for sizes no pass uses, and each "
        "capture costs boot time and memory on a GPU shared by four engines",
    ),
    Deviation(
        "disable_piecewise_cuda_graph",
        False,
        "off: piecewise graphs compile the prefill through torch.compile at boot, minutes per engine, and capture "
        "the slots' seams into graphs that the audit's taps and the seams' stock fallback would have to follow",
    ),
    Deviation(
        "mem_fraction_static",
        None,
        "each engine's share of a GPU that B, C, B' and the twin share (qualify/isolation/memory.py); SGLang's "
        "default assumes the GPU is its own",
    ),
    Deviation(
        "max_total_tokens",
        None,
        "the KV pool capped to what the workload needs: SGLang sizes its pool from the free memory it measures, so "
        "an uncapped engine would take a neighbour's share",
    ),
    Deviation("dtype", "auto", "the slots' dtype named, not read from the model's config"),
    Deviation("random_seed", None, "0: every engine of a run starts from the same state"),
    Deviation(
        "sleep_on_idle",
        False,
        "on: an engine that waits for its turn yields the CPU instead of spinning while another engine is timed",
    ),
    Deviation(
        "enable_fp32_lm_head",
        False,
        "on: in bf16 a logit near 40 resolves to 0.25, coarser than the gate's 0.1 logprob tolerance; on the H200 "
        "every llama-8b top-2 gap was a multiple of 0.25, and a non-bit-exact kernel failed the gate on the "
        "logits' rounding rather than on its own error",
    ),
    Deviation("skip_tokenizer_init", False, "token ids in and out: the workload is token ids", in_identity=False),
    Deviation("log_level", "info", "error: the engine's log is the worker's boot line", in_identity=False),
)
"""Every setting a qualification engine gives SGLang that is not SGLang's default."""
