#!/usr/bin/env bash
# Device run for issue 22 (the first hour): on the H200, `hotfloat verify` with no --device picks cuda; every
# `hotfloat new` template passes the full GPU verify (CUDA-graph capture and replays for its graph-safe ops); a
# Cacheon-style bundle imported with `hotfloat bundle import` verifies on cuda; and the light commands' start-up time
# and imports. Writes $OUT/cli/summary.txt and the verify reports; about 1-2 minutes (bf16 only).
# Run: bash tools/device/run_all.sh engine_install-first-in-the-same-call ... cli:150 (needs the engine payload for
# its Python path; see DEVICE_PLAN). Dry run on a CPU box: OUT=/tmp/o PYTHON=.venv/bin/python NO_ENGINE=1 bash tools/device/cli.sh
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/out}
dir="$OUT/cli"
mkdir -p "$dir"
if [ -z "${NO_ENGINE:-}" ]; then . tools/device/sglang_env.sh || exit 1; fi
PY=${PYTHON:-python3}
work=$(mktemp -d)
# The sandbox is proven by tools/device/sandbox.sh; here the point is the CLI's defaults and the templates on a GPU.
sandbox=(--unsandboxed)
echo "NOTE: verify runs --unsandboxed here (trusted template code; the sandbox has its own device script)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee "$dir/gpu.txt"
results=()

# 1. start-up: wall time (median of 3) and whether torch/triton/grpc were imported
for args in "--help" "slots" "hash examples/silu_torch" "bundle schema"; do
  t=$($PY - $args <<'PY'
import subprocess, sys, time, statistics
argv = sys.argv[1:]
probe = ("import sys\nfrom hotfloat.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
         "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'triton', 'grpc', 'bittensor'}),"
         " file=sys.stderr)")
times, heavy = [], ""
for _ in range(3):
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
    times.append(time.monotonic() - t0)
    heavy = [ln for ln in p.stderr.splitlines() if ln.startswith("HEAVY")][-1]
print(f"{statistics.median(times):.2f}s {heavy}")
PY
)
  results+=("startup  hotfloat $args  $t")
done

# 2. every template from `hotfloat new`, verified with the default device (auto -> cuda here)
for slot in activation.silu_and_mul norm.rmsnorm norm.fused_add_rmsnorm attention.decode; do
  b="$work/${slot//./_}"
  $PY -m hotfloat.cli new "$b" --slot "$slot" >/dev/null
  start=$(date +%s)
  timeout -k 5 60 $PY -m hotfloat.cli verify "$b" --dtype bf16 --json "${sandbox[@]}" >"$dir/$slot.json" 2>"$dir/$slot.err"
  rc=$?
  got=$($PY -c 'import json,sys; r=json.load(open(sys.argv[1])); g=sum("graph" in x["shape"] or "replay" in x["shape"] for x in r["rows"]); print(r["device"], r["status"], len(r["rows"]), "rows", g, "graph rows")' "$dir/$slot.json" 2>/dev/null || echo "no report")
  results+=("template $slot  rc=$rc  $got  $(( $(date +%s) - start ))s")
done

# 3. a Cacheon-style bundle, imported then verified on cuda
$PY -m hotfloat.cli bundle import tests/authoring/cacheon/silu_setup --out "$work/imported" >"$dir/import.txt" 2>&1
timeout -k 5 60 $PY -m hotfloat.cli verify "$work/imported" --dtype bf16 --json "${sandbox[@]}" >"$dir/imported.json" 2>"$dir/imported.err"
rc=$?
results+=("import   cacheon silu_setup  rc=$rc  $($PY -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["device"], r["status"])' "$dir/imported.json" 2>/dev/null || echo 'no report')")

printf '%s\n' "${results[@]}" | tee "$dir/summary.txt"
rm -rf "$work"
