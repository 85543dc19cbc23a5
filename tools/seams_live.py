#!/usr/bin/env python3
"""The live seam-activation tier on a GPU with SGLang (the H200 through the seams_live recipe, tools/device/recipes/seams_live.sh).

    python3 tools/seams_live.py (--model DIR | --tiny-model DIR) [--out DIR] [--boot-timeout 200] [--serial]

Boots SGLang's offline Engine with the hotfloat plugin: null-armed, an exact bundle (SGLang's own kernels through
the seam ABI) on activation.silu_and_mul + norm.rmsnorm + norm.fused_add_rmsnorm, one broken bundle per slot, torch
math on all three (reported, not judged), and a missing bundle (must refuse to boot). `--tiny-model DIR` first writes
a random-weight 2-layer Qwen2 there. Prints a table and writes live.json (+ each arm's spec, log, seam reports) under
--out; exit 0 only on PASS. Running it is the opt-in: a missing prerequisite is an `error:` line and exit 1.
"""

import argparse
import json
import os
import signal
import sys
from dataclasses import asdict
from pathlib import Path

from hotfloat.errors import HotfloatError
from hotfloat.seams.live import ArmSpec, Expect, LiveConfig, run_live
from hotfloat.verdict import Status

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "seams" / "fixtures"
SILU, RMS, FUSED = "activation.silu_and_mul", "norm.rmsnorm", "norm.fused_add_rmsnorm"
ARMS = (
    ArmSpec("null", None, Expect.REFERENCE, (SILU, RMS, FUSED)),
    ArmSpec("exact", str(FIXTURES / "live_exact"), Expect.EQUAL, (SILU, RMS, FUSED)),
    ArmSpec("broken-silu", str(FIXTURES / "silu_broken"), Expect.DIFFER, (SILU,)),
    ArmSpec("broken-rmsnorm", str(FIXTURES / "rmsnorm_broken"), Expect.DIFFER, (RMS,)),
    ArmSpec("broken-fused", str(FIXTURES / "fused_broken"), Expect.DIFFER, (FUSED,)),
    ArmSpec("torch-math", str(FIXTURES / "live_torch_exact"), Expect.INFO, (SILU, RMS, FUSED)),
    ArmSpec("missing-bundle", "/nonexistent/hotfloat-bundle", Expect.BOOT_FAILS),
)
ENGINE = dict(
    skip_tokenizer_init=True,
    attention_backend="triton",
    sampling_backend="pytorch",
    grammar_backend="none",
    disable_radix_cache=True,
    cuda_graph_max_bs=4,
    disable_piecewise_cuda_graph=True,
    # Boots share one GPU: SGLang sizes its KV pool from the memory free at its start, so a concurrent boot's
    # allocations would eat a small fraction; a roomy fraction plus a small token cap keeps each engine at ~1-2 GB.
    mem_fraction_static=0.15,
    max_total_tokens=16384,
    random_seed=0,
    log_level="warning",
)
PROMPTS = ((1, 2, 3, 4, 5), tuple(range(100, 117)), tuple(range(7, 1000, 31)), (42,) * 9)


def make_tiny_qwen2(path: Path) -> None:
    """A random-weight 2-layer Qwen2 (hidden 256, vocab 1024) in bf16: a validator-owned model in a second."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1024,
        max_position_embeddings=2048,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(path)


def table(result) -> str:
    rows = [("arm", "expect", "status", "exit", "boot_s", "wall_s", "routed (silu/rms/fused)", "reason")]
    for a in result.arms:
        routed = "/".join(str(a.routed.get(s, "-")) for s in (SILU, RMS, FUSED))
        rows.append(
            (
                a.name,
                a.expect.value,
                a.status.value,
                str(a.returncode),
                str(a.boot_s or "-"),
                str(a.wall_s),
                routed,
                a.reason[:110],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="an existing model directory")
    src.add_argument("--tiny-model", help="write a random-weight tiny Qwen2 here first")
    p.add_argument("--out", default="out/seams_live")
    p.add_argument("--boot-timeout", type=float, default=200.0)
    p.add_argument("--serial", action="store_true", help="boot the arms one at a time")
    p.add_argument("--engine-python", default=os.environ.get("HOTFLOAT_ENGINE_PYTHON") or sys.executable)
    args = p.parse_args()
    # An outer timeout's SIGTERM unwinds through run_live's cleanup, which ends every engine's process group.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        if args.tiny_model:
            make_tiny_qwen2(Path(args.tiny_model))
        cfg = LiveConfig(
            engine_python=args.engine_python,
            model_path=args.model or args.tiny_model,
            arms=ARMS,
            engine=ENGINE,
            prompts=PROMPTS,
            max_new_tokens=16,
            boot_timeout_s=args.boot_timeout,
            parallel=1 if args.serial else len(ARMS),
            workdir=str(out / "arms"),
        )
        result = run_live(cfg)
    except HotfloatError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    report = {
        "status": result.status.value,
        "reason": result.reason,
        "engine": ENGINE,
        "arms": [{**asdict(a), "expect": a.expect.value, "status": a.status.value} for a in result.arms],
    }
    (out / "live.json").write_text(json.dumps(report, indent=1, default=str))
    print(table(result))
    print(f"LIVE {result.status.value}: {result.reason}")
    return 0 if result.status is Status.PASS else 1


if __name__ == "__main__":
    sys.exit(main())
