"""Exploit: write the right answer, then scribble over it a moment later (passes a check that looks too early)."""
import threading
import time

import torch.nn.functional as F


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())

    def scribble():
        time.sleep(0.002)
        out.zero_()

    threading.Thread(target=scribble, daemon=True).start()
