"""The in-engine audit of attention.prefill: per audited call, a window of one request's new tokens with their whole
causal context, cut to one KV head and recast as a one-request call of the slot, so the validator recomputes it with
the slot's own reference and judges it with its verify tolerance.

Prefill runs eagerly (SGLang captures decode only), so an audited call reads its request's offsets on the host: a
sync, but the same one in every engine, since all of them audit the same calls. The key picks request b, KV head h and
new tokens i0..i0+r of b. The recast call's prefix is b's cached tokens then its new tokens before i0, its new tokens
the window, so window token j sees exactly what token i0+j saw; its out is the query heads of h at those tokens, as the
call returned them. A context too long for one entry moves the window earlier, and a prefix too long on its own is not
audited (every engine skips the same calls). A call inside a CUDA-graph capture is not audited: its extents are data.
"""

from __future__ import annotations

import torch

from .audit_dump import pack_entry

SLOT = "attention.prefill"


def _pick(key: int, total: int) -> int:
    return key % total if total > 0 else 0


class PrefillSite:
    """One audited prefill call: the recast inputs copied at staging, the window of out copied at commit."""

    def __init__(self, n: int, sm_scale: float, window: tuple[int, int, int], inputs: dict, cut: tuple):
        self.n, self.scalars, self.window, self.inputs, self.cut = n, {"sm_scale": sm_scale}, window, inputs, cut
        self.out: torch.Tensor | None = None

    @classmethod
    def stage(cls, n: int, draws: tuple[int, ...], rows: int, max_bytes: int, tensors: dict, values: dict):
        """The site of this call (inputs copied), or None when its request's prefix alone passes `max_bytes`."""
        q, k, v = tensors["q"], tensors["k"], tensors["v"]
        batch = tensors["qo_indptr"].shape[0] - 1
        if batch < 1 or q.shape[0] == 0:
            return None
        b = _pick(draws[0], batch)
        q0, q1 = (int(x) for x in tensors["qo_indptr"][b : b + 2].tolist())
        p0, p1 = (int(x) for x in tensors["kv_indptr"][b : b + 2].tolist())
        new, cached = q1 - q0, p1 - p0
        hkv, d = k.shape[1], k.shape[2]
        group = q.shape[1] // hkv
        head = _pick(draws[1], hkv)
        esize = q.element_size()
        per_context = 2 * d * esize + 8  # K and V of one token of one head, and its page index
        r = max(1, min(rows, new))
        fixed = r * (2 * group + 2) * d * esize + 64
        room = (max_bytes - fixed) // per_context - cached  # new tokens before the window that still fit
        if new < 1 or room < 0:
            return None
        i0 = _pick(draws[2], min(new - r, room) + 1)
        pages = tensors["kv_indices"][p0:p1]
        heads = slice(head * group, (head + 1) * group)
        one = slice(head, head + 1)
        prefix = cached + i0
        inputs = {
            "q": q[q0 + i0 : q0 + i0 + r, heads].clone(),
            "k": k[q0 + i0 : q0 + i0 + r, one].clone(),
            "v": v[q0 + i0 : q0 + i0 + r, one].clone(),
            "k_buffer": torch.cat([tensors["k_buffer"][:, one][pages], k[q0 : q0 + i0, one]]),
            "v_buffer": torch.cat([tensors["v_buffer"][:, one][pages], v[q0 : q0 + i0, one]]),
            "qo_indptr": torch.tensor([0, r], dtype=tensors["qo_indptr"].dtype, device=q.device),
            "kv_indptr": torch.tensor([0, prefix], dtype=tensors["kv_indptr"].dtype, device=q.device),
            "kv_indices": torch.arange(prefix, dtype=tensors["kv_indices"].dtype, device=q.device),
        }
        if prefix == 0:  # an empty pool is no shape a kernel is called with: one unread row
            inputs["k_buffer"], inputs["v_buffer"] = (torch.zeros_like(inputs["k"][:1]) for _ in range(2))
        return cls(n, float(values["sm_scale"]), (i0, r, new), inputs, (q0 + i0, r, heads))

    def commit(self, outputs: dict[str, torch.Tensor]) -> None:
        start, r, heads = self.cut
        self.out = outputs["out"][start : start + r, heads].clone()

    def entries(self) -> list[tuple[dict, bytes]]:
        """The call as one entry (header, bytes), in the row-wise sites' format; none if the call never returned."""
        if self.out is None:
            return []
        head = {"slot": SLOT, "site": self.n, "execution": 1, "rows": list(self.window), "scalars": self.scalars}
        return [pack_entry(head, (*self.inputs.items(), ("out", self.out)))]
