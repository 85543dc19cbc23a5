#!/usr/bin/env bash
# Device run for issue 13's fused slot (norm.fused_add_rmsnorm on the H200): `hotfloat bench` of
# examples/fused_add_rmsnorm_triton on the slot's bench shapes (decode 1-256 tokens x hidden 896-8192, two prefill
# shapes) beside the unfused torch paths, then `hotfloat verify --device cuda` of the example (graph capture and
# replays included) and of the three hostile fused bundles, which must FAIL. Writes $OUT/fused/: bench.txt (table),
# bench.json, bench.png, verify.json, verify.txt, hostile.txt. About 100 s; FUSED_BUDGET (s per measurement, default
# 0.15) trades precision for time. Needs `.whl` carried (pydantic and its deps for the device's Python).
# Standalone: OUT=/tmp/o bash tools/device/fused.sh; in one lease with others: tools/device/run_all.sh fused:150.
set -x
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/fused"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)'
. tools/device/pyenv.sh
EX=examples/fused_add_rmsnorm_triton
SANDBOX=""
if ! command -v bwrap >/dev/null 2>&1 || ! command -v prlimit >/dev/null 2>&1; then
  echo "NOTE: bwrap/prlimit missing on this machine: verify runs UNSANDBOXED (the CPU suite covers the sandbox)"
  SANDBOX=--unsandboxed
fi
BENCH='import sys; from hotfloat.cli.bench_cmd import bench; bench.main(sys.argv[1:], prog_name="hotfloat bench")'
VERIFY='import sys; from hotfloat.cli.verify_cmd import verify; verify.main(sys.argv[1:], prog_name="hotfloat verify")'

timeout 75 python3 -c "$BENCH" "$EX" --device cuda --shapes bench --budget "${FUSED_BUDGET:-0.15}" \
  --save "$OUT/fused/bench.json" --plot "$OUT/fused/bench.png" 2>&1 | tee "$OUT/fused/bench.txt"

# The example and the hostile bundles verify concurrently: correctness only, the timing above is done.
(
  for adv in fused_forgets_residual fused_stale_residual fused_in_place; do
    timeout 40 python3 -c "$VERIFY" "tests/adversarial/bundles/$adv" --device cuda --dtype bf16 --timeout 30 $SANDBOX \
      --json > "$OUT/fused/$adv.json" 2>/dev/null
    echo "$adv exit=$? (expected 2)"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["status"], r["rows"][0]["reason"])' \
      "$OUT/fused/$adv.json" 2>&1
  done
) > "$OUT/fused/hostile.txt" 2>&1 &
timeout 85 python3 -c "$VERIFY" "$EX" --device cuda --dtype bf16 --dtype fp32 --timeout 75 $SANDBOX --json \
  > "$OUT/fused/verify.json" 2> "$OUT/fused/verify.stderr"
echo "verify exit=$? (expected 0)" | tee "$OUT/fused/verify.txt"
python3 - "$OUT/fused/verify.json" <<'PY' 2>&1 | tee -a "$OUT/fused/verify.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['status']} in {r['seconds']}s seed={r['seed']} sandboxed={r['sandboxed']}")
for row in r["rows"]:
    err = "" if row["max_abs_err"] is None else f"{row['max_abs_err']:.3g}"
    print(f"{row['dtype']:5} {row['shape']:34} {row['status']:5} {err:9} {row['reason'][:110]}")
PY
wait
cat "$OUT/fused/hostile.txt"
ls -la "$OUT/fused"
