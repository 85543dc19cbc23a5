"""A kernel written to Cacheon's attention.decode call: q (B, Hq, D) against a padded cache k and v (B, S, Hkv, D),
request b attending to its first seq_lens[b] positions."""

import torch


def attention_decode(q, k, v, seq_lens, sm_scale, out):
    group = q.shape[1] // k.shape[2]
    keys = k.float().repeat_interleave(group, dim=2)
    vals = v.float().repeat_interleave(group, dim=2)
    logits = torch.einsum("bhd,bshd->bhs", q.float(), keys) * sm_scale
    past = torch.arange(k.shape[1], device=q.device)[None, :] >= seq_lens[:, None]
    logits = logits.masked_fill(past[:, None, :], float("-inf"))
    out.copy_(torch.einsum("bhs,bshd->bhd", logits.softmax(-1), vals))


def setup(engine):
    import sglang.srt.layers.attention.triton_backend as backend

    backend.TritonAttnBackend.forward_decode = engine.patched_decode
