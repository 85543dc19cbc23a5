"""A kernel written to Cacheon's attention.sdpa call: one sequence, q (T, Hq, D) against k and v (S, Hkv, D), causal
with the queries as the last T of the S positions."""

import torch


def attention(q, k, v, out, sm_scale, causal=True):
    t, s = q.shape[0], k.shape[0]
    group = q.shape[1] // k.shape[1]
    keys = k.float().repeat_interleave(group, dim=1)
    vals = v.float().repeat_interleave(group, dim=1)
    logits = torch.einsum("thd,shd->hts", q.float(), keys) * sm_scale
    if causal:
        later = torch.ones(t, s, dtype=torch.bool, device=q.device).triu(s - t + 1)
        logits = logits.masked_fill(later, float("-inf"))
    out.copy_(torch.einsum("hts,shd->thd", logits.softmax(-1), vals))
