"""One audit stratum's state on its device (hotfloat.seams.audit): the sealed rows, their heads and MAC partials,
the execution count and the round's start; the host taps and the CUDA taps both write it, the dump reads it."""

from __future__ import annotations

import numpy as np
import torch

from ..audit.layout import Layout
from ..audit.philox import PARAMS, seal_words
from ..slots import DTYPES


class Ring:
    """One stratum's device state: `data` rows 0..keep-1 (kept), `keep` (trash), `keep+1` (the stage) and `keep+2`
    (the recheck's scratch), each a sealed entry; `head` per row its execution and whether the bundle served it;
    `macs` per row the MAC's partial sums (pre's, post's, the routed flag's, then the last `recheck` of them: the
    recheck's, the inputs' words read again after the call); `state` the executions so far and the count at this
    round's start."""

    def __init__(self, layout: Layout, keep: int, device: torch.device, parts: int, recheck: int, carve=None):
        self.layout, self.keep, self.device, self.recheck = layout, keep, device, recheck
        rows = keep + 3
        shapes = {"data": (rows, layout.words), "head": (rows, 2), "macs": (rows, parts), "state": (2,)}
        made = (
            carve(shapes) if carve else {k: torch.zeros(s, dtype=torch.int64, device=device) for k, s in shapes.items()}
        )
        self.data, self.head, self.macs, self.state = (made[k] for k in ("data", "head", "macs", "state"))
        self.routed = False
        """Whether the bundle serves this stratum's calls (set on the host at each eager call or capture)."""

    def entries(self, key: int) -> tuple[int, list[dict]]:
        """(calls this round, the round's kept entries as {e, routed, mac, recheck: the MAC of its input words read
        after the call, words: ciphertext trimmed to its used length}); syncs with the device."""
        count, base = (int(x) for x in self.state.tolist())
        head, macs, out = self.head.cpu(), self.macs.cpu(), []
        for r in range(self.keep):
            e, routed = int(head[r, 0]), int(head[r, 1])
            if e <= base:
                continue
            words = self.data[r].cpu()
            ks, _ = seal_words(key, e, self.layout.ring, np.arange(PARAMS, dtype=np.uint64))
            params = (words[:PARAMS].numpy().view(np.uint64) ^ ks).view(np.int64).tolist()
            used = used_words(self.layout, params)
            tag, again = (
                int(s.sum()) & ((1 << 64) - 1) for s in macs[r].split([macs.shape[1] - self.recheck, self.recheck])
            )
            out.append(
                {"execution": e, "routed": bool(routed), "mac": tag, "recheck": again, "words": words[:used].clone()}
            )
        return count - base, sorted(out, key=lambda x: x["execution"])

    def next_round(self) -> None:
        self.state[1].copy_(self.state[0])


def used_words(layout: Layout, params: list[int]) -> int:
    """Words of an entry that can be non-zero under its parameters: all but the unused tail of the context piece."""
    if layout.kind == "rowwise":
        return layout.words
    kv = layout.pieces[-1]
    tokens = (params[7] if layout.kind == "prefill" else params[3]) if params[0] else 0
    per_token = 2 * kv.shape[2] * DTYPES[layout.dtype].itemsize
    return kv.word + -(-max(0, min(tokens, kv.shape[0])) * per_token // 8)
