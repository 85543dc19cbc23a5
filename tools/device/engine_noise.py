"""Where a qualification pass's time and noise come from, on one SGLang engine per model (H200 diagnostics).

For each model preset, boots one SGLang engine the way a qualification does (hotfloat.qualify.engines.sglang_engine,
plugin loaded, nothing armed, collector frozen after warm-up), then serves rounds in which every request mode is timed
once in a shuffled order: batch sizes and what the requests ask back (no logprobs, token logprobs, token logprobs plus
the top-2 the gate's near-tie margins need). Per pass: wall seconds, the engine tree's CPU seconds, and GPU utilisation
from NVML right after the pass (is the step bound by the GPU or by the scheduler's Python?). Prints a table of the
median pass, the robust relative s.d. (MAD) and the per-decode-step milliseconds; writes $OUT/engine_noise/*.json.

    python3 tools/device/engine_noise.py --presets qwen2-0.5b,llama-8b --rounds 6 --new 128
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics as st
import sys
import time
from pathlib import Path


def mad_rel(xs: list[float]) -> float:
    m = st.median(xs)
    return 1.4826 * st.median([abs(x - m) for x in xs]) / m


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="qwen2-0.5b")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--batches", default="32,128")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds; a preset is skipped once it is spent")
    args = ap.parse_args()
    out = Path(os.environ.get("OUT", "/tmp/out")) / "engine_noise"
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    from hotfloat.qualify import hostload
    from hotfloat.qualify.checkpoint import ensure
    from hotfloat.qualify.presets import PRESETS
    from hotfloat.qualify.host import lib_dir

    lib = str(lib_dir())
    sys.path.insert(0, lib)
    os.environ["PYTHONPATH"] = os.pathsep.join([lib, os.environ.get("PYTHONPATH", "")])
    import pynvml

    pynvml.nvmlInit()
    gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
    batches = [int(b) for b in args.batches.split(",")]
    modes = {
        "none": dict(return_logprob=False),
        "lp": dict(return_logprob=True),
        "lp+top2": dict(return_logprob=True, top_logprobs_num=2),
    }
    rows = []
    for preset in args.presets.split(","):
        if time.monotonic() - t0 > args.budget - 60:
            print(f"{preset}: skipped, budget spent", flush=True)
            continue
        tb = time.monotonic()
        model = ensure(preset, "bf16", 0)
        gen_s = time.monotonic() - tb
        from hotfloat.qualify.engines.sglang_engine import SglangEngine

        big = PRESETS[preset]["hidden_size"] >= 2048
        spec = dict(
            model_dir=str(model),
            graph_batches=batches,
            mem_fraction=0.3 if big else 0.2,
            kv_tokens=2 * max(batches) * (256 + args.new) + 4096,
            dtype="bf16",
            bundle=None,
        )
        eng = SglangEngine(spec)
        vocab = PRESETS[preset]["vocab_size"]
        rng = random.Random(1)

        def prompts(n):
            return [[rng.randrange(1, vocab) for _ in range(64 + (i * 37) % 192)] for i in range(n)]

        def run(bs, mode):
            params = [{"max_new_tokens": args.new, "temperature": 0.0, "ignore_eos": True}] * bs
            return eng.engine.generate(input_ids=prompts(bs), sampling_params=params, **modes[mode])

        for bs in batches:  # warm-up: every batch size and mode once
            for mode in modes:
                run(bs, mode)
        eng.freeze_gc()
        boot_s = time.monotonic() - tb
        print(f"{preset}: checkpoint {gen_s:.1f} s, boot+warm-up {boot_s:.1f} s", flush=True)
        cells = [(bs, m) for bs in batches for m in modes]
        got: dict[tuple, list[dict]] = {c: [] for c in cells}
        for _ in range(args.rounds):
            if time.monotonic() - t0 > args.budget - 15:
                break
            rng.shuffle(cells)
            for bs, mode in cells:
                before = hostload.tree_cpu_s(os.getpid())
                s = time.perf_counter()
                run(bs, mode)
                wall = time.perf_counter() - s
                util = pynvml.nvmlDeviceGetUtilizationRates(gpu).gpu
                got[(bs, mode)].append(dict(wall=wall, cpu=hostload.tree_cpu_s(os.getpid()) - before, util=util))
        for (bs, mode), xs in sorted(got.items()):
            if not xs:
                continue
            w = [x["wall"] for x in xs]
            rows.append(
                dict(
                    preset=preset,
                    bs=bs,
                    mode=mode,
                    n=len(w),
                    median_ms=1e3 * st.median(w),
                    min_ms=1e3 * min(w),
                    max_ms=1e3 * max(w),
                    mad_rel=mad_rel(w),
                    step_ms=1e3 * st.median(w) / args.new,
                    cpu_per_wall=st.median(x["cpu"] / x["wall"] for x in xs),
                    gpu_util=st.median(x["util"] for x in xs),
                    boot_s=boot_s,
                    passes=xs,
                )
            )
        (out / "rows.json").write_text(json.dumps(rows, indent=1))
        eng.engine.shutdown()
    print(
        f"{'preset':11} {'bs':>4} {'mode':8} {'n':>3} {'med ms':>8} {'min':>8} {'max':>8} {'MAD%':>6} {'step ms':>8} "
        f"{'cpu/wall':>8} {'gpu%':>5}"
    )
    for r in rows:
        print(
            f"{r['preset']:11} {r['bs']:4d} {r['mode']:8} {r['n']:3d} {r['median_ms']:8.1f} {r['min_ms']:8.1f} "
            f"{r['max_ms']:8.1f} {100 * r['mad_rel']:6.2f} {r['step_ms']:8.3f} {r['cpu_per_wall']:8.2f} {r['gpu_util']:5.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
