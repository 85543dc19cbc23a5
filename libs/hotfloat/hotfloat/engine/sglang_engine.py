"""The SGLang engine inside a qualification worker: SGLang's offline Engine fed token ids, the bundle armed by the
hotfloat_sglang plugin in every SGLang process of this engine, greedy completions with logprobs and top-2 margins.

Settings are the validator's and part of the engine identity (`settings_for`); every one that is not SGLang's own
default is in hotfloat.engine.deviations with its reason: attention on SGLang's Triton or FlashInfer backend, PyTorch
sampling, no grammar backend, no radix cache, SGLang's own decode CUDA graphs for the workload's batch sizes (smaller decode
batches pad up to the next one), piecewise graphs off, a KV pool capped to what the workload needs, and fp32 logits.
The pool SGLang really built is part of the identity (`kv_pool_tokens`, so it must equal B's), and one smaller than
the workload's need refuses to serve: a squeezed pool would queue requests, a different work. The pool is read where
`Engine.get_server_info` reads it (the scheduler's init info), without that call's round trip. The plugin arms the
bundle from the environment (HOTFLOAT_SEAMS=1, HOTFLOAT_ARMED_BUNDLE, HOTFLOAT_ARMED_IDENTITY, and HOTFLOAT_TWIN_OF
for the gate's twin) in SGLang's scheduler process only: this process never imports candidate code. It holds the
schedulers' control channel (hotfloat.seams.control), which hands each scheduler the audit's settings with its secret
key before the bundle is imported, and over which this process asks for the twin's slots, the seam counts and each
round's audit. The audit's settings and the calibration handicap (HOTFLOAT_HANDICAP_US) stay out of the engine
identity.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata

from ..audit.config import AuditConfig
from ..seams import ENV_ATTENTION, ENV_HANDICAP
from ..seams.control import ControlServer

CONTROL_TIMEOUT_S = 120.0
ENGINE_ARGS = {"skip_tokenizer_init": True, "log_level": "error"}
"""What the engine is given beside its settings: plumbing, outside the identity (hotfloat.engine.deviations)."""


def settings_for(spec: dict) -> dict:
    """The SGLang settings of a qualification engine, all of them in its identity; each that is not SGLang's default
    is in hotfloat.engine.deviations with its reason."""
    return dict(
        attention_backend=spec.get("attention", "triton"),
        sampling_backend="pytorch",
        grammar_backend="none",
        disable_radix_cache=True,
        disable_cuda_graph=False,
        cuda_graph_bs=[int(b) for b in spec["graph_batches"]],
        disable_piecewise_cuda_graph=True,
        mem_fraction_static=float(spec["mem_fraction"]),
        max_total_tokens=int(spec["kv_tokens"]),
        dtype={"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[spec["dtype"]],
        random_seed=0,
        sleep_on_idle=bool(spec.get("sleep_on_idle", True)),
        enable_fp32_lm_head=True,
    )


class SglangEngine:
    def __init__(self, spec: dict):
        os.environ.update(HOTFLOAT_SEAMS="1", SGLANG_PLUGINS="hotfloat")
        for k in ("HOTFLOAT_ARMED_BUNDLE", "HOTFLOAT_ARMED_IDENTITY", "HOTFLOAT_TWIN_OF", "HOTFLOAT_TWIN_IDENTITY"):
            os.environ.pop(k, None)
        if spec.get("bundle"):
            os.environ.update(HOTFLOAT_ARMED_BUNDLE=spec["bundle"], HOTFLOAT_ARMED_IDENTITY=spec["identity"])
        if spec.get("twin_of"):
            os.environ.update(HOTFLOAT_TWIN_OF=spec["twin_of"], HOTFLOAT_TWIN_IDENTITY=spec["twin_identity"])
        os.environ[ENV_HANDICAP] = str(spec.get("handicap_us", 0.0))
        self.settings = settings_for(spec)
        os.environ[ENV_ATTENTION] = self.settings["attention_backend"]
        audit = AuditConfig.from_wire(spec.get("audit"))
        self.control = ControlServer({"audit": audit.to_wire() if audit else None, "dtype": spec["dtype"]})
        model = spec["model_dir"]
        import sglang
        import torch

        self.engine = sglang.Engine(model_path=model, **ENGINE_ARGS, **self.settings)
        self.control.wait(1, CONTROL_TIMEOUT_S)
        pool = int(self.engine._scheduler_init_result.scheduler_infos[0]["max_total_num_tokens"])
        if pool < int(spec["kv_need"]):
            raise RuntimeError(
                f"SGLang built a KV pool of {pool} tokens, fewer than the {spec['kv_need']} the workload needs: the "
                "GPU had too little free memory at boot"
            )
        with open(os.path.join(model, "config.json"), "rb") as f:
            config = f.read()
        self.info = {
            "engine": "sglang",
            "sglang": sglang.__version__,
            "sgl-kernel": _version("sglang-kernel", "sgl-kernel"),
            "flashinfer": _version("flashinfer-python", "flashinfer"),
            "torch": torch.__version__,
            "cuda": str(torch.version.cuda),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
            "model_config_sha256": hashlib.sha256(config).hexdigest(),
            **{k: str(v) for k, v in self.settings.items()},
            "kv_pool_tokens": str(pool),
            "gc": "frozen after warm-up",
        }
        self.identity = hashlib.sha256(
            json.dumps({k: v for k, v in self.info.items() if k != "gpu"}, sort_keys=True).encode()
        ).hexdigest()

    def serve(self, prompts, max_new, on_done) -> None:
        params = [{"max_new_tokens": int(m), "temperature": 0.0, "ignore_eos": True} for m in max_new]
        outs = self.engine.generate(input_ids=prompts, sampling_params=params, return_logprob=True, top_logprobs_num=2)
        for i, o in enumerate(outs):
            meta = o["meta_info"]
            lps = [float(v[0]) for v in meta["output_token_logprobs"]]
            margins = [float(t[0][0]) - float(t[1][0]) for t in meta["output_top_logprobs"]]
            on_done(i, [int(t) for t in o["output_ids"]], lps, margins)

    def freeze_gc(self) -> None:
        """After warm-up: SGLang freezes the collector in this process (its tokenizer manager), the scheduler and
        the detokenizer, so later collections scan only what a pass allocates."""
        self.engine.freeze_gc()

    def reset_counts(self) -> None:
        """Nothing to reset from here: the counts live in SGLang's scheduler process and cover graph capture and
        warm-up as well as the timed passes (with graphs, capture is where a decode kernel is called at all)."""

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """The schedulers' routed and stock calls per slot, summed."""
        routed: dict[str, int] = {}
        stock: dict[str, int] = {}
        for reply, _ in self.control.ask({"op": "counts"}, CONTROL_TIMEOUT_S):
            for slot, c in reply["counts"].items():
                routed[slot] = routed.get(slot, 0) + int(c["routed"])
                stock[slot] = stock.get(slot, 0) + int(c["stock"])
        return routed, stock

    def set_twin(self, slots: list[str]) -> list[str]:
        """Enables the twin's nudge for `slots` in every scheduler; returns the slots they enabled."""
        return sorted(
            {
                s
                for reply, _ in self.control.ask({"op": "twin", "slots": sorted(slots)}, CONTROL_TIMEOUT_S)
                for s in reply["twin"]
            }
        )

    def audit(self) -> dict:
        """The round's audit from the scheduler (one: the audit is per engine on one GPU), in the Auditor's dump form:
        strata, entries as (header, sealed words), unaudited calls, error."""
        replies = self.control.ask({"op": "audit"}, CONTROL_TIMEOUT_S)
        if len(replies) != 1:
            raise RuntimeError(f"the audit expects one scheduler, {len(replies)} answered")
        (head, data), at, entries = replies[0], 0, []
        for entry in head["entries"]:
            n = 8 * int(entry.pop("words"))
            entries.append((entry, data[at : at + n]))
            at += n
        return {"strata": head["strata"], "entries": entries, "unaudited": head["unaudited"], "error": head["error"]}


def _version(*dists: str) -> str:
    for d in dists:
        try:
            return metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return "absent"
