"""Run with TRITON_INTERPRET=1 (tests/seams/test_audit_triton.py): the CUDA taps' Triton kernels, interpreted on
the CPU, write bit for bit the rings the host taps write, for every kind and dtype, over executions enough to cycle
the trash row; prints one line per case and exits non-zero on the first difference."""

import os
import sys

import torch

from hotfloat.audit.layout import layout_for
from hotfloat.seams.audit import TorchTaps
from hotfloat.seams.audit_ring import Ring
from hotfloat.seams.audit_triton import TritonTaps
from hotfloat.slots import get_slot

KEY = (1 << 62) + 987654321


def case(slot, dims, dtype, scalars, draw, calls=9, keep=3, rows=4, context=12) -> bool:
    lay = layout_for(get_slot(slot), dims, dtype, scalars, rows, context)
    host, dev = TorchTaps(KEY), TritonTaps(KEY)
    parts = dev.parts_for(lay)
    a, b = (Ring(lay, keep, torch.device("cpu"), parts) for _ in range(2))
    g = torch.Generator().manual_seed(0)
    for _ in range(calls):
        t, out = draw(g)
        host.pre(a, t)
        host.post(a, out, True)
        dev.pre(b, t)
        dev.post(b, out, True)
    same = torch.equal(a.state, b.state) and torch.equal(a.head[:keep], b.head[:keep])
    same = same and torch.equal(a.data[:keep], b.data[:keep])
    mac = [int(r.macs[i].sum()) & ((1 << 64) - 1) for r in (a, b) for i in range(keep)]
    same = same and mac[:keep] == mac[keep:]
    print(f"{slot} {dtype}: {'equal' if same else 'DIFFERENT'}", flush=True)
    return same


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
    ok &= case("attention.prefill", dims, "bf16", {"sm_scale": 0.3}, prefill)

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
        context=6,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
