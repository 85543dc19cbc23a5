"""The SGLang engine inside a qualification worker: SGLang's offline Engine fed token ids, the bundle armed by the
hotfloat_sglang plugin in every SGLang process of this engine, greedy completions with logprobs and top-2 margins.

Settings are the validator's and part of the engine identity: attention on SGLang's Triton backend (no prebuilt
flashinfer cubins needed), PyTorch sampling, no grammar backend, no radix cache (so B and C do the same prefill work
on every pass), SGLang's own decode CUDA graphs up to the batch size, piecewise graphs off, and a KV pool capped to
what the workload needs: the engines boot concurrently on one GPU, and SGLang sizes its pool from the free memory it
measures before and after loading the model, so an uncapped neighbour allocating in between would starve it. The plugin is armed from
the environment (HOTFLOAT_SEAMS=1, HOTFLOAT_ARMED_BUNDLE, HOTFLOAT_ARMED_IDENTITY); each process writes its seam
counts to HOTFLOAT_SEAMS_REPORT_DIR when it exits, so `counts` interrupts the scheduler (SIGINT: Python unwinds and
runs its exit hooks) and reads the reports back.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import signal
import time
from importlib import metadata

MODEL = "/model"


class SglangEngine:
    def __init__(self, spec: dict):
        home = os.environ.get("HOTFLOAT_WORKER_HOME", "/tmp")
        self.reports = os.path.join(home, "seams")
        os.makedirs(self.reports, exist_ok=True)
        os.environ.update(HOTFLOAT_SEAMS="1", SGLANG_PLUGINS="hotfloat", HOTFLOAT_SEAMS_REPORT_DIR=self.reports)
        for k in ("HOTFLOAT_ARMED_BUNDLE", "HOTFLOAT_ARMED_IDENTITY"):
            os.environ.pop(k, None)
        if spec.get("bundle"):
            os.environ.update(HOTFLOAT_ARMED_BUNDLE=spec["bundle"], HOTFLOAT_ARMED_IDENTITY=spec["identity"])
        model = spec.get("model_dir") or MODEL
        self.settings = dict(
            attention_backend="triton", sampling_backend="pytorch", grammar_backend="none", disable_radix_cache=True,
            disable_cuda_graph=False, cuda_graph_max_bs=int(spec["max_batch"]), disable_piecewise_cuda_graph=True,
            mem_fraction_static=float(spec["mem_fraction"]), max_total_tokens=int(spec["kv_tokens"]), dtype={"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[spec["dtype"]],
            random_seed=0, sleep_on_idle=bool(spec.get("sleep_on_idle", True)),
        )
        import sglang
        import torch

        self.engine = sglang.Engine(model_path=model, skip_tokenizer_init=True, log_level="error", **self.settings)
        with open(os.path.join(model, "config.json"), "rb") as f:
            config = f.read()
        self.info = {
            "engine": "sglang", "sglang": sglang.__version__, "sgl-kernel": _version("sglang-kernel", "sgl-kernel"),
            "flashinfer": _version("flashinfer-python", "flashinfer"), "torch": torch.__version__,
            "cuda": str(torch.version.cuda),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
            "model_config_sha256": hashlib.sha256(config).hexdigest(),
            **{k: str(v) for k, v in self.settings.items()},
        }
        self.identity = hashlib.sha256(json.dumps({k: v for k, v in self.info.items() if k != "gpu"},
                                                  sort_keys=True).encode()).hexdigest()

    def serve(self, prompts, max_new, on_done) -> None:
        params = [{"max_new_tokens": int(m), "temperature": 0.0, "ignore_eos": True} for m in max_new]
        outs = self.engine.generate(input_ids=prompts, sampling_params=params, return_logprob=True, top_logprobs_num=2)
        for i, o in enumerate(outs):
            meta = o["meta_info"]
            lps = [float(v[0]) for v in meta["output_token_logprobs"]]
            margins = [float(t[0][0]) - float(t[1][0]) for t in meta["output_top_logprobs"]]
            on_done(i, [int(t) for t in o["output_ids"]], lps, margins)

    def reset_counts(self) -> None:
        """Nothing to reset from here: the counts live in SGLang's scheduler process and cover graph capture and
        warm-up as well as the timed passes (with graphs, capture is where a decode kernel is called at all)."""

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Interrupts SGLang's helper processes so their plugin writes final counts, then sums the reports."""
        watchdog = getattr(self.engine.tokenizer_manager, "_subprocess_watchdog", None)
        if watchdog is not None:
            watchdog.stop()  # else it takes the scheduler's exit for a crash and SIGQUITs this whole process tree
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        kids = _descendants(os.getpid())
        for pid in kids:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 20
        while time.monotonic() < end and any(_alive(p) for p in kids):
            time.sleep(0.05)
        routed: dict[str, int] = {}
        stock: dict[str, int] = {}
        for path in glob.glob(os.path.join(self.reports, "seams-*.json")):
            if int(path.rsplit("-", 1)[1].split(".")[0]) == os.getpid():
                continue  # this process armed too but serves no model calls
            with open(path) as f:
                for slot, c in json.load(f)["counts"].items():
                    routed[slot] = routed.get(slot, 0) + int(c["routed"])
                    stock[slot] = stock.get(slot, 0) + int(c["stock"])
        return routed, stock


def _version(*dists: str) -> str:
    for d in dists:
        try:
            return metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return "absent"


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, from /proc (the engine's sandbox holds nothing else)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
