"""The share of an engine step each slot holds, measured on the GPU (issue 42 item 5); run by the slot_share recipe (tools/device/recipes/slot_share.sh).

    python3 tools/device/helpers/slot_share.py --out share.json [--preset llama-8b --preset mixtral-8b] [--steps 8]

For each preset a child process generates the qualification checkpoint (hotfloat.qualify.checkpoint, bf16, seed 0),
loads it into SGLang's ModelRunner in-process with the qualification engine's settings (triton attention, PyTorch
sampling, no radix cache, fp32 logits, a KV pool of the workload's size), and hooks every seam of the hotfloat_sglang
plugin on a null-armed router (every call stock, each wrapped in a `hotfloat:<slot>` profiler range). After warm-up it
profiles prefill steps of the `sglang` workload's prefill batch (8 prompts of 1-2k tokens, one extend step each) and
decode steps of its decode batch (32 requests), each step in a `hotfloat.step:<kind>` range, and attributes every
kernel to the slot whose call launched it (slot_share_trace.py). Decode runs eagerly so that each kernel's launch
has a place: a step's GPU time is the same kernels a CUDA graph replays, without the host's gaps between them.
The parent writes a hotfloat.slots.share.ShareRecord; `hotfloat slots --share` prints the committed one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 0
WARM_DECODES = 4


def _range_calls(router) -> None:
    """Wraps every routed seam call in a profiler range named after its slot."""
    import torch

    call = router.call

    def ranged(slot, stock, *args, **kwargs):
        with torch.profiler.record_function(f"hotfloat:{slot}"):
            return call(slot, stock, *args, **kwargs)

    router.call = ranged


def _hook_every_seam():
    """A null-armed router behind every seam the plugin has, applied before SGLang builds its layers; returns it and
    the slots those seams reach."""
    from hotfloat.seams import arm
    from hotfloat_sglang.plugin import seam_hooks
    from hotfloat_sglang.seams import registry
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    router = arm(None)
    _range_calls(router)
    hooks, after = seam_hooks(router, every=True)
    for target, hook in hooks:
        HookRegistry.register(target, hook, HookType.AFTER if target in after else HookType.AROUND)
    HookRegistry.apply_hooks()
    return router, [slot for seam in registry() for slot in seam.slots]


def _model_runner(model_dir: str, kv_tokens: int):
    """SGLang's ModelRunner in this process, as bench_one_batch builds it, with the qualification engine's settings
    (hotfloat.qualify.sglang_engine) and CUDA graphs off."""
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.entrypoints.engine import _set_envs_and_config
    from sglang.srt.layers.moe import initialize_moe_config
    from sglang.srt.layers.quantization.fp4_utils import initialize_fp4_gemm_config
    from sglang.srt.layers.quantization.fp8_utils import initialize_fp8_gemm_config
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.server_args import PortArgs, ServerArgs, set_global_server_args_for_scheduler

    args = ServerArgs(
        model_path=model_dir,
        dtype="bfloat16",
        attention_backend="triton",
        sampling_backend="pytorch",
        grammar_backend="none",
        disable_radix_cache=True,
        disable_cuda_graph=True,
        disable_piecewise_cuda_graph=True,
        max_total_tokens=kv_tokens,
        mem_fraction_static=0.85,
        skip_tokenizer_init=True,
        random_seed=SEED,
        enable_fp32_lm_head=True,
    )
    _set_envs_and_config(args)
    set_global_server_args_for_scheduler(args)
    for initialize in (initialize_moe_config, initialize_fp8_gemm_config, initialize_fp4_gemm_config):
        initialize(args)
    return ModelRunner(
        model_config=ModelConfig.from_server_args(args),
        mem_fraction_static=args.mem_fraction_static,
        gpu_id=0,
        tp_rank=0,
        tp_size=1,
        moe_ep_rank=0,
        moe_ep_size=1,
        pp_rank=0,
        pp_size=1,
        nccl_port=PortArgs.init_new(args).nccl_port,
        server_args=args,
    )


def _checkpoint(preset: str) -> str:
    """The qualification checkpoint of `preset`, refused when the generator made another architecture."""
    from hotfloat.qualify.checkpoint import ensure
    from hotfloat.engine.presets import PRESETS

    model_dir = ensure(preset, "bf16", SEED)
    made = json.loads((model_dir / "config.json").read_text())["model_type"]
    if made != PRESETS[preset]["arch"]:
        raise SystemExit(f"{preset}: the checkpoint generator made a {made!r} model, not {PRESETS[preset]['arch']!r}")
    return str(model_dir)


def measure(preset: str, steps: int, part: Path) -> None:
    """One preset, in this process: the per-kind attribution and the seam counts, written to `part` as JSON."""
    import torch
    from sglang.bench_one_batch import decode, extend, prepare_synthetic_inputs_for_latency_test
    from slot_share_trace import attribute
    from torch.profiler import ProfilerActivity, profile, record_function

    from hotfloat.engine.presets import PRESETS
    from hotfloat.qualify.workload import kv_cap, make_workload, prompts

    model_dir = _checkpoint(preset)
    router, reached = _hook_every_seam()
    workload = make_workload("sglang", PRESETS[preset]["vocab_size"], seed=SEED)
    runner = _model_runner(model_dir, kv_cap(workload))
    reqs = lambda ids: prepare_synthetic_inputs_for_latency_test(len(ids), 0, custom_inputs=ids)  # noqa: E731

    def clear():
        runner.req_to_token_pool.clear()
        runner.token_to_kv_pool_allocator.clear()

    decoding, prefilling = prompts(workload, 0, 0), prompts(workload, 0, 1)
    with torch.inference_mode():
        for batch_prompts in (prompts(workload, -1, 1), prompts(workload, -1, 0)):  # warm-up: every kernel built
            ids, _, batch = extend(reqs(batch_prompts), runner)
            for _ in range(WARM_DECODES):
                ids, _ = decode(ids, batch, runner)
            clear()
        torch.cuda.synchronize()
        events = []
        for kind in ("prefill", "decode"):
            if kind == "decode":
                ids, _, batch = extend(reqs(decoding), runner)
                for _ in range(WARM_DECODES):
                    ids, _ = decode(ids, batch, runner)
                torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(steps):
                    with record_function(f"hotfloat.step:{kind}"):
                        if kind == "prefill":
                            extend(reqs(prefilling), runner)
                        else:
                            ids, _ = decode(ids, batch, runner)
                    if kind == "prefill":
                        torch.cuda.synchronize()
                        clear()
                torch.cuda.synchronize()
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                prof.export_chrome_trace(f.name)
                events += json.load(open(f.name))["traceEvents"]
            clear()
    shares = attribute(events)
    for kind, share in shares.items():
        share["slots"] = {s: share["slots"].get(s, 0.0) for s in reached}
        share["tokens"] = len(decoding) if kind == "decode" else sum(map(len, prefilling))
    counts = {s: c.routed + c.stock for s, c in router.counts().items() if c.routed + c.stock}
    part.write_text(json.dumps({"preset": preset, "dtype": "bf16", **shares, "counts": counts}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--preset", action="append", help="default: llama-8b and mixtral-8b")
    parser.add_argument("--steps", type=int, default=8, help="steps profiled per kind")
    parser.add_argument(
        "--command", default="bash tools/device/run.sh slot_share:500", help="recorded as the record's maker"
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--part", type=Path, help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.measure:
        measure(a.measure, a.steps, a.part)
        return 0
    import sglang
    import torch
    import triton

    from hotfloat.slots.share import ModelShare, ShareRecord

    models, failed = [], []
    for preset in a.preset or ["llama-8b", "mixtral-8b"]:
        part = a.out.with_suffix(f".{preset}.part.json")
        child = [sys.executable, __file__, "--out", str(a.out), "--measure", preset, "--part", str(part)]
        done = subprocess.run([*child, "--steps", str(a.steps)])  # its folder is on its path: slot_share_trace
        if done.returncode != 0 or not part.is_file():
            failed.append(preset)
            print(f"slot_share: {preset} failed (exit {done.returncode})", file=sys.stderr, flush=True)
            continue
        got = json.loads(part.read_text())
        print(f"slot_share: {preset} seam calls {got.pop('counts')}", file=sys.stderr, flush=True)
        models.append(ModelShare.model_validate(got))
        part.unlink()  # share-*.part.json beside the record would match the records' glob, share-*.json
    if not models:
        return 1
    record = ShareRecord(
        gpu=torch.cuda.get_device_name(0),
        measured_at=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        command=a.command,
        method=(
            f"{a.steps} steps per kind after warm-up, SGLang {sglang.__version__} ModelRunner in-process with the "
            "qualification engine's settings, CUDA graphs off; torch.profiler GPU time of every kernel, copy and fill "
            "each step launched, attributed to the seam call (null-armed router, every call stock) that launched it"
        ),
        versions={
            "sglang": sglang.__version__,
            "torch": torch.__version__,
            "triton": triton.__version__,
            "cuda": str(torch.version.cuda),
        },
        models=models,
    )
    a.out.write_text(record.model_dump_json(indent=2) + "\n")
    print(f"slot_share: wrote {a.out}" + (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
