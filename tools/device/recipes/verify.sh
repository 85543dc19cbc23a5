#!/usr/bin/env bash
# verify: `verify --device cuda` of the examples, the GPU-only exploits and the attention exploits.
# Each bundle verified concurrently (CUDA-graph capture and >= 3 replays for graph-safe ops), under the sandbox when
# bwrap exists (else unsandboxed, said so in the output); every PASS and FAIL must be the expected one. Writes
# $OUT/verify/<bundle>.json and $OUT/verify/summary.txt; about 2 minutes:  bash tools/device/run.sh verify:200
# Needs `.whl` carried (pydantic and its deps for the device's Python). Dry run on a CPU box:
#   OUT=/tmp/o VERIFY_DEVICE=cpu PYTHON=.venv/bin/python bash tools/device/recipes/verify.sh  (GPU-only bundles are then N/A).
set -x
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/verify"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv || true
${PYTHON:-python3} -c 'import sys, torch, triton; print(sys.version, torch.__version__, torch.version.cuda, triton.__version__)'
. tools/device/helpers/pyenv.sh
SANDBOXED=1
if ! command -v bwrap >/dev/null 2>&1 || ! command -v prlimit >/dev/null 2>&1; then
  echo "NOTE: bwrap/prlimit missing on this machine: running UNSANDBOXED (the CPU suite covers the sandbox)"
  SANDBOXED=0
fi
SANDBOXED=$SANDBOXED DEVICE=${VERIFY_DEVICE:-cuda} timeout -k 5 140 ${PYTHON:-python3} - "$OUT/verify" <<'PY' 2>&1 | tee "$OUT/verify/run.txt"
"""Runs every job concurrently (one child each), then prints bundle, expected, got, seconds and the first reason."""
import json, os, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hotfloat.bundle import load_bundle
from hotfloat.verify import VerifyOptions, verify_bundle

out = Path(sys.argv[1])
device = os.environ["DEVICE"]
sandboxed = os.environ["SANDBOXED"] == "1"
ALL = None
QUICK = dict(dtypes=["bf16"], max_shapes=3)
jobs = [  # (bundle path, expected status, options)
    ("examples/silu_torch", "PASS", dict(dtypes=ALL)),
    ("examples/silu_triton", "PASS", dict(dtypes=ALL)),
    ("examples/rmsnorm_triton", "PASS", dict(dtypes=["bf16", "fp32"])),
    ("examples/silu_broken", "FAIL", QUICK),
    ("examples/silu_sparse", "FAIL", QUICK),
    ("examples/silu_mutates_input", "FAIL", QUICK),
    ("examples/rmsnorm_broken", "FAIL", QUICK),
    ("tests/adversarial/bundles/side_stream_deferred", "FAIL", QUICK),
    ("tests/adversarial/bundles/graph_host_constant", "FAIL", QUICK),
    ("tests/adversarial/bundles/stream_race_pointer_cache", "FAIL", QUICK),
    ("tests/adversarial/bundles/cache_by_pointer", "FAIL", QUICK),
    ("tests/adversarial/bundles/deferred_thread", "FAIL", QUICK),
    ("tests/adversarial/bundles/no_write", "FAIL", QUICK),
    ("tests/adversarial/bundles/ignores_stride", "FAIL", QUICK),
    ("examples/attention_decode_triton", "PASS", dict(dtypes=["bf16"])),
    *(
        (f"tests/adversarial/bundles/attention_{name}", "FAIL", QUICK)
        for name in ("ignores_lengths", "reads_past_length", "stale_kv", "wrong_pages")
    ),
]


def run(job):
    path, expected, opts = job
    started = time.monotonic()
    try:
        options = VerifyOptions(device=device, seed=20261202, sandboxed=sandboxed, timeout_s=90, **opts)
        report = verify_bundle(load_bundle(path), options)
        (out / f"{Path(path).name}.json").write_text(json.dumps(report.model_dump(mode="json"), indent=1))
        rows = report.rows
        graph = [r for r in rows if r.shape.startswith("graph")]
        bad = next((r for r in rows if r.status.value != "PASS"), None)
        detail = f"{bad.dtype} {bad.shape}: {bad.reason}" if bad else f"{len(rows)} rows, {len(graph)} graph rows"
        got = report.status.value
    except Exception as e:  # an infrastructure fault is a result of this run too
        got, detail = "ERROR", f"{type(e).__name__}: {e}"
    return path, expected, got, time.monotonic() - started, detail


with ThreadPoolExecutor(max_workers=4) as pool:
    results = list(pool.map(run, jobs))
lines = [f"device={device} sandboxed={sandboxed}"]
for path, expected, got, seconds, detail in results:
    mark = "ok" if got == expected else "UNEXPECTED"
    lines.append(f"{mark:10} {Path(path).name:28} expected={expected:4} got={got:5} {seconds:6.1f}s  {detail[:160]}")
(out / "summary.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
ls -la "$OUT/verify"
