#!/usr/bin/env bash
# Qualification on the H200 with CUDA-graph decode: check the graph path (tools/device/qualify_graphs.py), calibrate
# the decision rule on real engine processes (B against B for the false PASS rate; candidates with known injected
# speed-ups for the smallest effect detected at 95% power), then qualify examples/silu_triton end to end. Runs from
# the repo root with the device's python3 (torch + transformers, no venv); about 330 s at worst (45 + 175 + 100 s
# limits plus the environment). Writes $OUT/qualify/{env.txt,graphs.log,calibration.json,calibration.md,pool.json,
# silu_triton.json,silu_triton.evidence.json,*.log}.
set -x
cd "$(dirname "$0")/../.."
DEST="${OUT:-/tmp/out}/qualify"
mkdir -p "$DEST"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv; \
  python3 -c 'import torch, transformers, triton, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0)); print("transformers", transformers.__version__, "triton", triton.__version__)'; } > "$DEST/env.txt" 2>&1
. tools/device/pyenv.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SANDBOXED=1
if ! command -v bwrap >/dev/null 2>&1 || ! command -v prlimit >/dev/null 2>&1; then
  echo "NOTE: bwrap/prlimit missing on this machine: engine processes run UNSANDBOXED (the CPU suite covers the sandbox)"
  SANDBOXED=0
fi

timeout 45 python3 tools/device/qualify_graphs.py > "$DEST/graphs.log" 2>&1
echo "graph check exit $?"
cat "$DEST/graphs.log"

# QUALIFY_CALIBRATE=0 skips the calibration and only qualifies the example. The pool stops starting candidate runs
# when one more pair would not fit in its 160 s budget, so the timeout only catches a hung engine.
[ "${QUALIFY_CALIBRATE:-1}" = 1 ] && timeout 175 python3 - "$DEST" > "$DEST/calibration.log" 2>&1 <<'PY'
import json, os, sys, time
import numpy as np
from hotfloat.qualify.calibrate import analyse, pool_runs
from hotfloat.qualify.engine import PRESETS
from hotfloat.qualify.records import EngineSpec, RuleConfig
from hotfloat.qualify.workload import make_workload

dest = sys.argv[1]
engine = EngineSpec(preset="qwen2-0.5b", dtype="bf16", device="cuda", decode="graph")
workload = make_workload("gpu", PRESETS["qwen2-0.5b"]["vocab_size"], passes=2, seed=1)
t0 = time.time()
say = lambda d, i, n: print(f"{time.time() - t0:6.1f}s {d}", flush=True)
pool = pool_runs(engine, workload, [0, 1, 4], rounds=6, base_passes=4, budget_s=160, progress=say,
                 sandboxed=os.environ["SANDBOXED"] == "1")
json.dump([{"level": lv, "frame": f.model_dump(mode="json")} for lv, f in pool], open(f"{dest}/pool.json", "w"))
for lv, f in pool:
    print(f"level {lv} {f.role} wall {f.wall_s:.1f} s, {f.tokens_per_s:.0f} tok/s", flush=True)
base = [f.tokens_per_s for lv, f in pool if lv is None]
print(f"baseline runs: median {np.median(base):.0f} tok/s (eager decode measured 289), "
      f"median wall {np.median([f.wall_s for _, f in pool]):.1f} s", flush=True)
report = analyse(pool, RuleConfig(logprob_tol=0.1), trials=2000)
json.dump(report.model_dump(mode="json"), open(f"{dest}/calibration.json", "w"), indent=1)
lines = ["| level (passes removed) | true improvement | PASS | FAIL | NO_DECISION | mean pairs | PASS (noise model) |",
         "|---|---|---|---|---|---|---|"]
lines += [f"| {r.level} | {r.true_improvement:+.2%} | {r.pass_rate:.1%} | {r.fail_rate:.1%} | {r.no_decision_rate:.1%} "
          f"| {r.mean_pairs:.2f} | {r.model_pass_rate:.1%} |" for r in report.levels]
lines.append(f"\nruns {report.runs} ({report.run_seconds:.1f} s each, {time.time() - t0:.0f} s total); "
             f"sigma_run {report.sigma_run:.3%}; sigma_request {report.sigma_request:.3%}; "
             f"false PASS {report.false_pass_rate:.2%} (noise model {report.model_false_pass_rate:.2%}); "
             f"smallest detected at 95% power: {report.smallest_detected}; one qualification ~{report.qualification_minutes:.1f} min")
open(f"{dest}/calibration.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "calibration exit $?"
tail -n 40 "$DEST/calibration.log" 2>/dev/null

timeout 100 python3 - "$DEST" > "$DEST/silu_triton.log" 2>&1 <<'PY'
import json, os, sys
from hotfloat.qualify import QualifyOptions, RuleConfig, qualify_bundle, save_evidence

dest = sys.argv[1]
opts = QualifyOptions(preset="qwen2-0.5b", device="cuda", dtype="bf16", decode="graph", shapes="gpu", seed=2,
                      rule=RuleConfig(logprob_tol=0.1, max_pairs=2), sandboxed=os.environ["SANDBOXED"] == "1")
r = qualify_bundle("examples/silu_triton", opts, progress=lambda d, i, n: print(d, flush=True))
save_evidence(r.evidence, f"{dest}/silu_triton.evidence.json")
d = r.evidence.decision
out = {"status": r.status, "score": r.score, "reason": r.reason, "sandboxed": r.evidence.sandboxed, "improvement": d.improvement, "lower": d.lower,
       "upper": d.upper, "drift": d.drift, "pairs": d.pairs, "seconds": r.evidence.seconds,
       "runs": [(f.role, f.ok, round(f.wall_s, 1), round(f.tokens_per_s), sum(f.routed.values()), f.error) for f in r.evidence.frames]}
json.dump(out, open(f"{dest}/silu_triton.json", "w"), indent=1)
print(json.dumps(out, indent=1))
PY
echo "silu_triton qualification exit $?"
tail -40 "$DEST/silu_triton.log"
