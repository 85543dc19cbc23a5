"""A stand-in for `python -m hotfloat_sglang.offline SPEC` in CI: the same spec, result file and seam environment.

It arms the bundle as the SGLang plugin does (HOTFLOAT_SEAMS=1, HOTFLOAT_ARMED_BUNDLE / _IDENTITY; a failed arm
prints the plugin's FATAL line and exits), puts the same seam report in its result, and decodes greedily from a tiny
deterministic model whose MLP activation goes through the seam router, so a broken silu kernel changes the ids.
STANDIN_BYPASS_SEAM=1 simulates an engine whose seam is not wired (the bundle never runs).
Usage: standin_engine.py SPEC.json
"""

import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from hotfloat.errors import HotfloatError
from hotfloat.seams import arm_from_env

VOCAB = 97


class Model:
    """Embedding -> up projection -> silu_and_mul (through the seam) -> down projection -> argmax."""

    def __init__(self, router):
        g = torch.Generator().manual_seed(1234)
        self.router = router
        self.embed = torch.randn(VOCAB, 64, generator=g)
        self.up = torch.randn(64, 256, generator=g) / 8
        self.down = torch.randn(128, VOCAB, generator=g) / 8

    def stock(self, x):
        d = x.shape[-1] // 2
        return torch.nn.functional.silu(x[..., :d]) * x[..., d:]

    def complete(self, ids: list[int], n: int) -> list[int]:
        ids, out = [i % VOCAB for i in ids], []
        for _ in range(n):
            h = self.embed[ids].mean(0, keepdim=True) @ self.up
            a = (
                self.stock(h)
                if os.environ.get("STANDIN_BYPASS_SEAM")
                else self.router.silu_and_mul(h, stock=self.stock)
            )
            nxt = (int((a @ self.down).argmax()) + int(a.abs().sum() * 1e3)) % VOCAB  # sensitive to every value
            ids.append(nxt)
            out.append(nxt)
        return out


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    if not Path(spec["model_path"]).exists():
        sys.exit("model path does not exist")
    try:
        router = arm_from_env()
    except HotfloatError as e:
        print(f"hotfloat seams: FATAL: the armed bundle failed to load in pid {os.getpid()}: {e}", file=sys.stderr)
        return 1
    model = Model(router)
    t = time.monotonic()
    outs = [model.complete(list(p), spec["sampling"]["max_new_tokens"]) for p in spec["prompts"]]
    report = {
        "pid": os.getpid(),
        "identity": router.identity,
        "counts": {slot: asdict(c) for slot, c in router.counts().items()},
    }
    Path(spec["result_path"]).write_text(
        json.dumps(
            {"output_ids": outs, "boot_s": 0.0, "generate_s": round(time.monotonic() - t, 3), "reports": [report]}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
