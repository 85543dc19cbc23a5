"""Exploit: return at once and let a thread write the result later (work moved off the timed path)."""
import threading
import time

import torch.nn.functional as F


def silu_and_mul(x, out):
    def later():
        time.sleep(0.005)
        d = x.shape[-1] // 2
        out.copy_(F.silu(x[..., :d].float()) * x[..., d:].float())

    threading.Thread(target=later, daemon=True).start()
