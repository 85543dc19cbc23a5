"""A Cacheon-style (prepare, forward) MoE pair: `layout` stores each expert's up and gate projections as [H, I]
matrices once; `fused_experts` reads them per token choice."""

import torch


def layout(w13, w2):
    inter = w2.shape[-1]
    return {"up": w13[:, inter:].transpose(1, 2).contiguous(), "gate": w13[:, :inter].transpose(1, 2).contiguous(),
            "down": w2.transpose(1, 2).contiguous()}


def fused_experts(x, topk_ids, topk_weights, prepared, out):
    acc = torch.zeros(out.shape, dtype=torch.float32, device=out.device)
    for k in range(topk_ids.shape[1]):
        e = topk_ids[:, k].long()
        gate = torch.bmm(x.float()[:, None], prepared["gate"][e].float())[:, 0]
        up = torch.bmm(x.float()[:, None], prepared["up"][e].float())[:, 0]
        act = torch.nn.functional.silu(gate) * up
        acc += topk_weights[:, k, None].float() * torch.bmm(act[:, None], prepared["down"][e].float())[:, 0]
    out.copy_(acc)
