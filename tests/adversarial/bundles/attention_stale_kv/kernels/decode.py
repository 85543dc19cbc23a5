"""Cheat: snapshots the KV pool the first time it sees a buffer address and reads the snapshot afterwards, as a
kernel that "caches" a converted or re-laid-out copy of the cache would. New tokens written since are missed."""

import torch

_SNAPSHOTS = {}


def _pool(buffer):
    key = (buffer.data_ptr(), tuple(buffer.shape))
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = buffer.float().clone()
    return _SNAPSHOTS[key]


def decode(q, k_buffer, v_buffer, kv_indptr, kv_indices, out, sm_scale):
    group = q.shape[1] // k_buffer.shape[1]
    keys, values = _pool(k_buffer), _pool(v_buffer)
    for b in range(q.shape[0]):
        pages = kv_indices[int(kv_indptr[b]): int(kv_indptr[b + 1])]
        k = keys[pages].repeat_interleave(group, dim=1)
        v = values[pages].repeat_interleave(group, dim=1)
        p = torch.softmax(torch.einsum("hd,lhd->hl", q[b].float(), k) * sm_scale, dim=-1)
        out[b] = torch.einsum("hl,lhd->hd", p, v).to(out.dtype)
