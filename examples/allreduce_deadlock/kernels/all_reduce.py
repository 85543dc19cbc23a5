"""Deadlocks: rank 0 waits for a point-to-point message that never comes while its peers wait in the all-reduce.

The verifier must kill every rank at its timeout and report the hang, never wait forever."""

import torch.distributed as dist


def all_reduce(x, out, group):
    out.copy_(x)
    if dist.get_rank(group) == 0:
        dist.recv(out, src=1, group=group)
    else:
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)
