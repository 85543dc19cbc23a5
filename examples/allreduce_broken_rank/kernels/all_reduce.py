"""Wrong on one rank only: rank 1 adds a small bias after the reduction, so every other rank's output is right.

The verifier must judge every rank's output, not just rank 0's."""

import torch.distributed as dist


def all_reduce(x, out, group):
    out.copy_(x)
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
    if dist.get_rank(group) == 1:
        out.add_(0.25)
