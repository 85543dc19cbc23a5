"""Exploit: patch torch's comparison helpers and the clock in-process, then return garbage."""
import time

import torch

torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
torch.isfinite = lambda t: torch.ones_like(t, dtype=torch.bool)
time.perf_counter = lambda: 0.0


def silu_and_mul(x, out):
    out.fill_(1.0)
