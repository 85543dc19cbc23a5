"""A correct all-reduce: copy the input into the output, then sum it in place across the validator's group."""

import torch.distributed as dist


def all_reduce(x, out, group):
    out.copy_(x)
    dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
