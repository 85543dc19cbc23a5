"""A Cacheon-style reduce pair: `prepare` keeps the weights in fp32, the entry sums its experts and all-reduces
(guarded the way Cacheon's own examples guard it: only when torch.distributed is built and a group exists)."""

import torch
import torch.distributed as dist


def prepare(w13, w2):
    return w13.float(), w2.float()


def fused_experts_reduce(x, topk_ids, topk_weights, prepared, out, group=None):
    w13, w2 = prepared
    inter = w2.shape[-1]
    acc = torch.zeros(out.shape, dtype=torch.float32, device=out.device)
    for k in range(topk_ids.shape[1]):
        e = topk_ids[:, k].long()
        h = torch.bmm(w13[e], x.float()[:, :, None])[:, :, 0]
        act = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        acc += topk_weights[:, k, None].float() * torch.bmm(w2[e], act[:, :, None])[:, :, 0]
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(acc, group=group)
    out.copy_(acc)
