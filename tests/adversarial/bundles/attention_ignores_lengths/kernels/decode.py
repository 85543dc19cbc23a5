"""Cheat: treats the batch as uniform, every request attending over the mean length from its first page.

Tuned on a benchmark where all prompts have the same length; a real (ragged) batch attends over the wrong tokens."""

import torch


def decode(q, k_buffer, v_buffer, kv_indptr, kv_indices, out, sm_scale):
    group = q.shape[1] // k_buffer.shape[1]
    batch = q.shape[0]
    mean = max(1, int(kv_indptr[batch]) // batch)
    for b in range(batch):
        lo = int(kv_indptr[b])
        pages = kv_indices[lo: lo + mean]
        k = k_buffer[pages].float().repeat_interleave(group, dim=1)
        v = v_buffer[pages].float().repeat_interleave(group, dim=1)
        p = torch.softmax(torch.einsum("hd,lhd->hl", q[b].float(), k) * sm_scale, dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", p, v).to(out.dtype)
