"""The SGLang engine inside a qualification worker: SGLang's offline Engine fed token ids, the bundle armed by the
hotfloat_sglang plugin in every SGLang process of this engine, greedy completions with logprobs and top-2 margins.

Settings are the validator's and part of the engine identity: attention on SGLang's Triton backend (no prebuilt
flashinfer cubins needed), PyTorch sampling, no grammar backend, no radix cache (so B and C do the same prefill work
on every pass), SGLang's own decode CUDA graphs for the workload's batch sizes (smaller decode batches pad up to the
next one), piecewise graphs off, and a KV pool capped to what the workload needs: engines share one GPU, and SGLang
sizes its pool from the free memory it measures before and after loading the model, so an uncapped engine would take
a neighbour's share. The pool SGLang really built is part of the identity (`kv_pool_tokens`, so it must equal B's),
and one smaller than the workload's need refuses to serve: a squeezed pool would queue requests, a different work.
The pool is read where `Engine.get_server_info` reads it (the scheduler's init info), without that call's round trip. Logits are computed in fp32 (`enable_fp32_lm_head`): in
bf16 a logit near 40 is only resolved to 0.25, coarser than the gate's 0.1 logprob tolerance, so on the H200
(llama-8b) every top-2 gap was a multiple of 0.25 and a non-bit-exact kernel failed the gate on rounding of the
logits rather than on its own error. The plugin is armed from the environment
(HOTFLOAT_SEAMS=1, HOTFLOAT_ARMED_BUNDLE, HOTFLOAT_ARMED_IDENTITY, and HOTFLOAT_TWIN_OF for the gate's twin); each SGLang process keeps its seam counts in
HOTFLOAT_SEAMS_REPORT_DIR up to date, and `counts` sums them. The router lives in SGLang's scheduler process, so
the twin's slots and the audit's dump are asked of the plugin's report thread there through a control file in the
same directory, and each request waits for every process's acknowledgement (hotfloat_sglang.plugin). The audit's
settings (HOTFLOAT_AUDIT) and the calibration handicap (HOTFLOAT_HANDICAP_US) reach the plugin through the
environment and stay out of the engine identity.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import time
from importlib import metadata
from pathlib import Path

from ...seams import ENV_HANDICAP, AuditConfig
from ...seams.audit import ENV as ENV_AUDIT
from ...seams.audit_dump import read_dump

CONTROL_TIMEOUT_S = 120.0


class SglangEngine:
    def __init__(self, spec: dict):
        home = os.environ.get("HOTFLOAT_WORKER_HOME", "/tmp")
        self.reports = os.path.join(home, "seams")
        os.makedirs(self.reports, exist_ok=True)
        os.environ.update(HOTFLOAT_SEAMS="1", SGLANG_PLUGINS="hotfloat", HOTFLOAT_SEAMS_REPORT_DIR=self.reports)
        for k in ("HOTFLOAT_ARMED_BUNDLE", "HOTFLOAT_ARMED_IDENTITY", "HOTFLOAT_TWIN_OF", "HOTFLOAT_TWIN_IDENTITY"):
            os.environ.pop(k, None)
        if spec.get("bundle"):
            os.environ.update(HOTFLOAT_ARMED_BUNDLE=spec["bundle"], HOTFLOAT_ARMED_IDENTITY=spec["identity"])
        if spec.get("twin_of"):
            os.environ.update(HOTFLOAT_TWIN_OF=spec["twin_of"], HOTFLOAT_TWIN_IDENTITY=spec["twin_identity"])
        audit = AuditConfig.from_spec(spec)
        os.environ.update({ENV_AUDIT: audit.to_env() if audit else "", ENV_HANDICAP: str(spec.get("handicap_us", 0.0))})
        self._seq = 0
        model = spec["model_dir"]
        self.settings = dict(
            attention_backend="triton",
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
        import sglang
        import torch

        self.engine = sglang.Engine(model_path=model, skip_tokenizer_init=True, log_level="error", **self.settings)
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
        """Sums the per-process reports the plugin rewrites within REPORT_INTERVAL_S of any change; after the last
        pass the engine is idle, so waiting a few intervals gives the final counts."""
        from hotfloat_sglang.plugin import REPORT_INTERVAL_S

        time.sleep(3 * REPORT_INTERVAL_S)
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

    def set_twin(self, slots: list[str]) -> list[str]:
        """Enables the twin's nudge for `slots` in every SGLang process; returns the slots the schedulers enabled."""
        reports = self._control(twin=sorted(slots))
        return sorted({s for r in reports if r["pid"] != os.getpid() for s in r["twin"]})

    def audit(self) -> list[tuple[dict, bytes]]:
        """The audit entries every scheduler process dumped on request (this process serves no model calls)."""
        self._control(audit=True)
        return [
            e
            for p in sorted(Path(self.reports).glob("audit-*.json"))
            if int(p.stem.split("-")[1]) != os.getpid()
            for e in read_dump(p)
        ]

    def _control(self, **request) -> list[dict]:
        """Writes a request for the plugin threads and waits until every process's report acknowledged it."""
        self._seq += 1
        path = Path(self.reports) / "control.json"
        path.with_suffix(".tmp").write_text(json.dumps({"seq": self._seq, **request}))
        path.with_suffix(".tmp").replace(path)
        deadline = time.monotonic() + CONTROL_TIMEOUT_S
        while True:
            reports = [json.loads(p.read_text()) for p in Path(self.reports).glob("seams-*.json")]
            if reports and all(r.get("applied", 0) >= self._seq for r in reports):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the SGLang processes did not acknowledge {sorted(request)} within {CONTROL_TIMEOUT_S:.0f} s"
                )
            time.sleep(0.05)
        errors = [f"pid {r['pid']}: {r['error']}" for r in reports if r.get("error")]
        if errors:
            raise RuntimeError(f"the plugin failed {sorted(request)}: {'; '.join(errors)}")
        return reports


def _version(*dists: str) -> str:
    for d in dists:
        try:
            return metadata.version(d)
        except metadata.PackageNotFoundError:
            continue
    return "absent"
