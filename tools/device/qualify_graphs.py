"""Device-only check of the engine's CUDA-graph decode before any timed qualification run:

1. tiny fp32 engine: graph decode gives the same greedy tokens as the static-cache eager steps and as transformers'
   DynamicCache decode (logprobs within 1e-4) on left-padded mixed-length batches; bitwise equality with the
   static steps is reported (same kernels, so expected);
2. qwen2-0.5b bf16: tokens/s of the gpu workload's decode batch in each decode mode;
3. a kernel that syncs the host (`.item()`) is refused at capture with "kernel is not CUDA-graph capturable" (last:
   a failed capture must not disturb the checks before it).

It starts no engine processes (so `QualifyOptions.sandboxed` does not apply) and arms only its own kernel.
Exit 1 if 1 or 3 fails. Run from the repo root: PYTHONPATH=libs/hotfloat python3 tools/device/qualify_graphs.py"""

import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import torch

from hotfloat.qualify.engines.transformers_engine import build_engine, serve_batch
from hotfloat.qualify.engines.graphs import GraphCaptureError
from hotfloat.qualify.workload import SHAPES
from hotfloat.seams import arm

SYNCS = """
import torch

def run(x, out):
    d = x.shape[-1] // 2
    if x.sum().item() == float("inf"):
        raise ValueError("unreachable")
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


def serve(engine, lens, max_new, seed=0):
    gen = torch.Generator().manual_seed(seed)
    vocab = engine.model.config.vocab_size
    prompts = [torch.randint(1, vocab, (n,), generator=gen).tolist() for n in lens]
    done = {}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    serve_batch(engine, prompts, list(max_new), lambda i, t, lp, m: done.__setitem__(i, (t, lp)))
    torch.cuda.synchronize()
    return [done[i] for i in range(len(lens))], time.perf_counter() - t0


def modes(engine):
    return {m: dataclasses.replace(engine, decode=m, decoders={}) for m in ("eager", "static", "graph")}


def exactness() -> bool:
    runs = {m: [] for m in ("eager", "static", "graph")}
    for m, e in modes(build_engine("tiny", "fp32", "cuda", 0, arm(None), decode="graph")).items():
        for seed, lens in enumerate([(3, 11, 26, 40), (30, 2, 19, 7), (40, 12, 5, 33)]):
            runs[m] += serve(e, lens, (9, 4, 17, 12), seed)[0]
    ok = True
    for ref in ("static", "eager"):
        tokens = [a[0] for a in runs["graph"]] == [a[0] for a in runs[ref]]
        dlp = max(
            abs(x - y) for a, b in zip(runs["graph"], runs[ref], strict=False) for x, y in zip(a[1], b[1], strict=False)
        )
        print(
            f"tiny fp32, graph vs {ref}: same tokens {tokens}, max |logprob difference| {dlp:.2e}, "
            f"bitwise equal {runs['graph'] == runs[ref]}",
            flush=True,
        )
        ok = ok and tokens and dlp <= 1e-4
    return ok


def refusal() -> bool:
    major, minor = torch.cuda.get_device_capability()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "kernels").mkdir()
        (Path(tmp) / "kernels" / "k.py").write_text(SYNCS)
        (Path(tmp) / "manifest.toml").write_text(
            'bundle_id = "syncs"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
            f'source = "kernels/k.py"\nentry = "run"\ndtypes = ["fp32"]\narchitectures = ["sm_{major}{minor}"]\n'
        )
        engine = build_engine("tiny", "fp32", "cuda", 0, arm(tmp), decode="graph")
        try:
            serve(engine, (3, 9), (4, 4))
        except GraphCaptureError as e:
            ok = "not CUDA-graph capturable" in str(e) and engine.router.counts()["activation.silu_and_mul"].routed > 0
            print(f"host-syncing kernel refused at capture: {ok}: {str(e)[:200]}", flush=True)
            return ok
    print("host-syncing kernel was NOT refused at capture", flush=True)
    return False


def speed() -> None:
    lens, max_new = zip(*[(p, m) for p, m, _ in SHAPES["gpu"][0]], strict=False)
    for m, e in modes(build_engine("qwen2-0.5b", "bf16", "cuda", 0, arm(None), decode="graph")).items():
        serve(e, lens, max_new)
        _, s = serve(e, lens, max_new, seed=1)
        print(f"qwen2-0.5b bf16 decode batch, {m}: {sum(max_new) / s:.0f} tokens/s ({s * 1000:.0f} ms)", flush=True)


if __name__ == "__main__":
    print(
        "NOTE: engines are built in this process, UNSANDBOXED; the only kernel armed is this script's own SYNCS",
        flush=True,
    )
    exact = exactness()
    speed()
    sys.exit(0 if refusal() and exact else 1)
