"""The validator-chosen workload: fixed request shapes covering prefill-heavy and decode-heavy serving, with
prompt tokens drawn per pass from a seed the candidate never sees before it has to answer."""

from __future__ import annotations

import hashlib
import secrets

import numpy as np

from .records import Request, Workload

SHAPES: dict[str, list[list[tuple[int, int, str]]]] = {
    "tiny": [
        [(6, 10, "decode"), (9, 14, "decode"), (12, 18, "decode"), (16, 24, "decode")],
        [(48, 1, "prefill"), (56, 2, "prefill"), (64, 2, "prefill"), (72, 3, "prefill")],
    ],
    "gpu": [
        [
            (32, 48, "decode"),
            (64, 64, "decode"),
            (128, 56, "decode"),
            (256, 64, "decode"),
            (48, 40, "decode"),
            (96, 64, "decode"),
            (192, 32, "decode"),
            (160, 48, "decode"),
        ],
        [
            (1024, 4, "prefill"),
            (1536, 8, "prefill"),
            (2048, 2, "prefill"),
            (1280, 6, "prefill"),
            (1792, 4, "prefill"),
            (896, 8, "prefill"),
            (1152, 2, "prefill"),
            (1664, 6, "prefill"),
        ],
    ],
    "sglang": [
        [(32 + (i * 97) % 481, 128, "decode") for i in range(32)],
        [(1024 + (i * 131) % 1025, 4, "prefill") for i in range(8)],
    ],
}
"""(prompt_len, max_new_tokens, kind) per request, grouped in batches. `sglang` is a fixed decode-heavy batch (32
requests, prompts of 32 to 512 tokens, 128 new tokens each, all finishing on the same step, so the pass has no
ragged tail) and a prefill batch (8 prompts of 1024 to 2048 tokens, 4 new tokens): about 1.1 s per pass on the H200
with the llama-8b model, decode through SGLang's CUDA graphs and prefill over thousands of tokens at once."""


def make_workload(
    shapes: str, vocab_size: int, *, passes: int = 2, warmup_passes: int = 1, seed: int | None = None
) -> Workload:
    """The named request mix; seed None draws a fresh secret seed (published afterwards in the evidence)."""
    return Workload(
        batches=[[Request(prompt_len=p, max_new_tokens=m, kind=k) for p, m, k in batch] for batch in SHAPES[shapes]],
        passes=passes,
        warmup_passes=warmup_passes,
        vocab_size=vocab_size,
        seed=secrets.randbits(63) if seed is None else seed,
    )


def prompts(workload: Workload, pass_index: int, batch_index: int) -> list[list[int]]:
    """Prompt tokens of one batch in one pass; negative pass indices are warm-up passes (disjoint prompts)."""
    digest = hashlib.sha256(f"{workload.seed}:{pass_index}:{batch_index}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    return [rng.integers(1, workload.vocab_size, size=r.prompt_len).tolist() for r in workload.batches[batch_index]]


def kv_need(workload: Workload) -> int:
    """KV-cache tokens the largest batch's prompts and completions take: a pool below this queues requests."""
    return max(sum(r.prompt_len + r.max_new_tokens for r in b) for b in workload.batches)


def kv_cap(workload: Workload) -> int:
    """KV-cache tokens an SGLang engine is given: what the workload needs with a quarter to spare, plus a few pages.
    Capped so engines sharing one GPU hold what the workload needs and no more."""
    return int(1.25 * kv_need(workload)) + 4096
