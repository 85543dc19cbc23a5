"""Run with TRITON_INTERPRET=1 (tests/seams/test_audit_triton.py): the CUDA taps' Triton kernels, interpreted on
the CPU, write bit for bit the rings the host taps write, for every kind and dtype, over executions enough to cycle
the trash row, routed or not; every other call rewrites one of its inputs after computing, and the recheck must see
it (its MAC is not the pre tap's) in both taps alike. Prints one line per case; exits non-zero on a difference."""

import os
import sys

import numpy as np
import torch

from hotfloat.audit.layout import layout_for
from hotfloat.audit.philox import PARAMS, seal_words
from hotfloat.seams.audit import TorchTaps
from hotfloat.seams.audit_ring import Ring
from hotfloat.seams.audit_triton import TritonTaps
from hotfloat.slots import get_slot

KEY = (1 << 62) + 987654321


def case(slot, dims, dtype, scalars, draw, mutate, calls=9, keep=3, rows=4, context=12) -> bool:
    lay = layout_for(get_slot(slot), dims, dtype, scalars, rows, context)
    host, dev = TorchTaps(KEY), TritonTaps(KEY)
    a, b = (Ring(lay, keep, torch.device("cpu"), *taps.parts_for(lay)) for taps in (host, dev))
    g = torch.Generator().manual_seed(0)
    for n in range(calls):
        t, out = draw(g)
        host.pre(a, t)
        dev.pre(b, t)
        if n % 2:
            _rewrite(t, mutate, g)
        host.post(a, t, out, n % 3 > 0)
        dev.post(b, t, out, n % 3 > 0)
    same = torch.equal(a.state, b.state) and torch.equal(a.head[:keep], b.head[:keep])
    same = same and torch.equal(a.data[:keep], b.data[:keep])
    kept = [r.entries(KEY)[1] for r in (a, b)]
    same = same and [(k["mac"], k["recheck"]) for k in kept[0]] == [(k["mac"], k["recheck"]) for k in kept[1]]
    seen = all((a.macs[r, 0] != a.macs[r, -1]) == (int(a.head[r, 0]) % 2 == 0) for r in range(keep) if _kept(a, r))
    print(f"{slot} {dtype}: {'equal' if same else 'DIFFERENT'}{'' if seen else ' RECHECK BLIND'}", flush=True)
    return same and seen


def _rewrite(t, name, g):
    """What a kernel that writes its inputs leaves: every element of `name` changed (a float moved, a page table
    reversed), so every window that holds any of it sees it."""
    x = t[name]
    if x.dtype.is_floating_point:
        x.add_(1.0)
    else:
        x.copy_(x.flip(0))


def _kept(ring, r) -> bool:
    """Whether row r holds a call's window (a request past the context keeps its parameters only)."""
    e = int(ring.head[r, 0])
    ks, _ = seal_words(KEY, e, ring.layout.ring, np.arange(PARAMS, dtype=np.uint64))
    return int(ring.data[r, 0].numpy().view(np.uint64) ^ ks[0]) == 1


def main() -> int:
    assert os.environ.get("TRITON_INTERPRET") == "1"
    ok = True
    for dtype, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        r = lambda g, *s: torch.randn(*s, generator=g).to(dt)  # noqa: E731
        ok &= case(
            "activation.silu_and_mul",
            {"T": 10, "D": 16},
            dtype,
            {},
            lambda g: ({"x": r(g, 10, 32)}, {"out": r(g, 10, 16)}),
            "x",
        )
        ok &= case(
            "norm.fused_add_rmsnorm",
            {"T": 9, "H": 24},
            dtype,
            {"eps": 1e-6},
            lambda g: (
                {"x": r(g, 9, 24), "residual": r(g, 9, 24), "weight": r(g, 24)},
                {"out": r(g, 9, 24), "residual_out": r(g, 9, 24)},
            ),
            "residual",
        )
    ok &= case(
        "norm.rmsnorm",
        {"T": 3, "H": 8},
        "fp32",
        {"eps": 1e-6},
        lambda g: (
            {"x": torch.randn(3, 8, generator=g), "weight": torch.randn(8, generator=g)},
            {"out": torch.randn(3, 8, generator=g)},
        ),
        "weight",
    )
    bf = torch.bfloat16

    def prefill(g):
        qo = torch.tensor([0, 5, 6, 13], dtype=torch.int64)
        kvp = torch.tensor([0, 3, 3, 13], dtype=torch.int32)
        t = {"q": torch.randn(13, 4, 8, generator=g).to(bf), "k": torch.randn(13, 2, 8, generator=g).to(bf)}
        t |= {"v": torch.randn(13, 2, 8, generator=g).to(bf), "k_buffer": torch.randn(40, 2, 8, generator=g).to(bf)}
        t |= {"v_buffer": torch.randn(40, 2, 8, generator=g).to(bf), "qo_indptr": qo, "kv_indptr": kvp}
        t["kv_indices"] = torch.randperm(40, generator=g)[:13]
        return t, {"out": torch.randn(13, 4, 8, generator=g).to(bf)}

    dims = {"T": 13, "Hq": 4, "Hkv": 2, "D": 8, "P": 40, "B": 3, "N": 13}
    ok &= case("attention.prefill", dims, "bf16", {"sm_scale": 0.3}, prefill, "q")

    def decode(g):
        t = {"q": torch.randn(3, 4, 8, generator=g).to(bf), "k_buffer": torch.randn(30, 2, 8, generator=g).to(bf)}
        t |= {
            "v_buffer": torch.randn(30, 2, 8, generator=g).to(bf),
            "kv_indptr": torch.tensor([0, 4, 5, 12], dtype=torch.int32),
        }
        t["kv_indices"] = torch.randperm(30, generator=g)[:12]
        return t, {"out": torch.randn(3, 4, 8, generator=g).to(bf)}

    ok &= case(
        "attention.decode",
        {"B": 3, "Hq": 4, "Hkv": 2, "D": 8, "P": 30, "N": 12},
        "bf16",
        {"sm_scale": 0.3},
        decode,
        "kv_indices",
        context=6,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
