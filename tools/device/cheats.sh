#!/usr/bin/env bash
# Device proof for issue 21 (about 90 s, limit 100 s): verify on the H200 with the judge-detection defences (drawn
# poison and padding, bursts run back to back on the GPU with stream-ordered snapshots, names hidden, real-activation
# inputs).
#   - honest examples PASS on cuda (eager bursts plus CUDA-graph capture and replays);
#   - the GPU-only exploits (side stream, graph host constant, stream race) still FAIL with the clone-based snapshot;
#   - the judge-detection and input-family cheats FAIL on cuda too (NaN-poison check, call spacing, fp16 squares, ...);
#   - collectives on NCCL with CUDA-graph capture when the machine has 2+ GPUs, else a SKIP line.
# Run: bash tools/device/run_all.sh engine_install:<s> cheats:110 ; results in $OUT/cheats/ (summary.txt last).
# Dry run on a CPU box (GPU-only bundles are then N/A, so UNEXPECTED):
#   OUT=/tmp/o CHEATS_DEVICE=cpu CHEATS_NO_ENGINE=1 CHEATS_LIMIT=600 PYTHON=.venv/bin/python bash tools/device/cheats.sh
set -u
cd "$(dirname "$0")/../.."
if [ -z "${CHEATS_NO_ENGINE:-}" ]; then . tools/device/sglang_env.sh || exit 1; fi
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-$PWD/libs/hotfloat}"
O="${OUT:?OUT must be set}/cheats"
mkdir -p "$O"
SANDBOXED=1
if ! command -v "${HOTFLOAT_BWRAP:-bwrap}" >/dev/null 2>&1; then
  echo "NOTE: bwrap missing on this machine: running UNSANDBOXED (the CPU suite covers the sandbox)"
  SANDBOXED=0
fi
SANDBOXED=$SANDBOXED DEVICE=${CHEATS_DEVICE:-cuda} timeout -k 5 "${CHEATS_LIMIT:-100}" ${PYTHON:-python3} - "$O" <<'PY' 2>&1 | tee "$O/run.txt"
"""Runs every job concurrently (one child each), then prints one line per bundle and the summary table."""
import json, os, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from hotfloat.bundle import load_bundle
from hotfloat.verify import VerifyOptions, verify_bundle

out, device = Path(sys.argv[1]), os.environ["DEVICE"]
sandboxed = os.environ["SANDBOXED"] == "1"
ADV = "tests/adversarial/bundles/"
QUICK = dict(dtypes=["bf16"], max_shapes=2)
jobs = [  # (bundle, expected, options, whether scan must be off to run it)
    ("examples/silu_triton", "PASS", dict(dtypes=["bf16", "fp16"], max_shapes=3), False),
    ("examples/rmsnorm_triton", "PASS", dict(dtypes=["bf16", "fp16", "fp32"], max_shapes=3), False),
    ("examples/fused_add_rmsnorm_triton", "PASS", dict(dtypes=["bf16"], max_shapes=3), False),
    (ADV + "side_stream_deferred", "FAIL", QUICK, True),
    (ADV + "graph_host_constant", "FAIL", QUICK, True),
    (ADV + "stream_race_pointer_cache", "FAIL", QUICK, True),
    (ADV + "judge_by_nan_poison", "FAIL", QUICK, False),
    (ADV + "judge_by_call_spacing", "FAIL", QUICK, True),
    (ADV + "judge_by_module_names", "FAIL", QUICK, True),
    (ADV + "honest_on_published_hidden_sizes", "FAIL", QUICK, False),
    (ADV + "rmsnorm_fp16_squares", "FAIL", QUICK, False),
    (ADV + "rmsnorm_skips_normalisation", "FAIL", QUICK, False),
]


def run(job):
    path, expected, opts, unscanned = job
    started = time.monotonic()
    try:
        options = VerifyOptions(device=device, seed=20261203, sandboxed=sandboxed, timeout_s=70, scan=not unscanned,
                                **opts)
        try:
            report = verify_bundle(load_bundle(path), options)
        except Exception as e:  # a sandbox that cannot start here is not what this script proves: say so, go on
            print(f"NOTE: {Path(path).name}: sandboxed run failed ({type(e).__name__}: {e}); retrying unsandboxed")
            report = verify_bundle(load_bundle(path), options.model_copy(update={"sandboxed": False}))
        (out / f"{Path(path).name}.json").write_text(json.dumps(report.model_dump(mode="json"), indent=1))
        graph = [r for r in report.rows if r.shape.startswith("graph")]
        bad = next((r for r in report.rows if r.status.value != "PASS"), None)
        detail = f"{bad.dtype} {bad.shape}: {bad.reason}" if bad else f"{len(report.rows)} rows, {len(graph)} graph"
        detail = ("" if report.sandboxed else "[unsandboxed] ") + detail
        got = report.status.value
    except Exception as e:  # an infrastructure fault is a result of this run too
        got, detail = "ERROR", f"{type(e).__name__}: {e}"
    return Path(path).name, expected, got, time.monotonic() - started, detail


def collective():
    if device != "cuda" or torch.cuda.device_count() < 2:
        return "allreduce_torch+cheats", "PASS/FAIL", "SKIP", 0.0, f"{torch.cuda.device_count()} GPU(s): NCCL needs 2"
    from hotfloat.collective import verify_collective
    started, lines = time.monotonic(), []
    for name, want in (("examples/allreduce_torch", "PASS"), (ADV + "allreduce_rebinds_input", "FAIL"),
                       (ADV + "allreduce_replaces_output", "FAIL")):
        rep = verify_collective(load_bundle(name), world_size=2, device="cuda", dtypes=["bf16"], seed=7,
                                sandboxed=sandboxed, timeout_s=40, scan=False)
        graphs = sum(r.shape.startswith("graph") for r in rep.rows)
        lines.append(f"{Path(name).name}={rep.status.value}(want {want}, {graphs} graph rows: {rep.reasons[-1][:80]})")
        if rep.status.value != want:
            return "collective", "as listed", "UNEXPECTED", time.monotonic() - started, "; ".join(lines)
    return "collective", "as listed", "as listed", time.monotonic() - started, "; ".join(lines)


with ThreadPoolExecutor(max_workers=4) as pool:
    results = list(pool.map(run, jobs))
try:
    results.append(collective())
except Exception as e:  # reported like any other job
    results.append(("collective", "as listed", "ERROR", 0.0, f"{type(e).__name__}: {e}"))
lines = [f"device={device} sandboxed={sandboxed}"]
for name, expected, got, seconds, detail in results:
    mark = "ok" if got in (expected, "SKIP") else "UNEXPECTED"
    lines.append(f"{mark:10} {name:34} expected={expected:9} got={got:10} {seconds:6.1f}s  {detail[:170]}")
(out / "summary.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
