#!/usr/bin/env bash
# Raw data for the resident-engine rule's calibration on the H200 (SGLang): boots CAL_STOCK stock engines B1..Bn and
# one engine per CAL_CANDIDATES bundle (C1, C2, ...; default the silu and fused examples, `none` for stock only),
# concurrently, as sandboxed resident engines on the qualification defaults (the generated llama-8b-shaped model,
# the `sglang` mix, fp32 logits), warms them up, then serves rounds (one pass per engine, random order per round)
# until the wall budget is spent, rewriting $OUT/calibrate/raw.json after every round; the completions of B1, B2 and
# the candidates in the first CAL_KEEP (20) rounds go to raw.json.outputs.jsonl. Afterwards, anywhere (no device):
#   hotfloat qualify calibrate analyse raw.json --out docs/calibration-h200.json          (false PASS, power, rule)
#   hotfloat qualify calibrate evidence raw.json --candidate C1 --rule-from docs/calibration-h200.json --out ev.json
# A quick analysis also runs here at the end (fewer bootstrap draws) so the log shows the numbers.
# Run: bash tools/device/run_all.sh engine_install:60 calibrate:500   (CAL_BUDGET=370 s of collection, boots
# included; CAL_STOCK=3 (3..8; six 8B engines of about 22 GB fit the H200); CAL_SEED=11; CAL_BOOT=330 s (checkpoint
# generation and boots); CAL_UNSANDBOXED=1 skips the sandbox).
# Falls back to --unsandboxed (NOTE line) when the sandbox cannot be built or no sandboxed round was served.
set -u -o pipefail
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
DEST="${OUT:-/tmp/out}/calibrate"
mkdir -p "$DEST"
T0=$(date +%s)
export HOTFLOAT_ENGINE_LOG_DIR="$DEST" HOTFLOAT_MODEL_CACHE=/tmp/hotfloat-models PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,memory.used --format=csv; nproc; } \
  > "$DEST/env.txt" 2>&1

SANDBOX=()
if ! python3 -c 'from hotfloat.qualify.host import engine_policy; from hotfloat.sandbox import ensure_available
ensure_available(engine_policy("cuda", "sglang"))' > "$DEST/sandbox_check.txt" 2>&1; then
  echo "NOTE: sandbox unavailable here ($(tail -c 300 "$DEST/sandbox_check.txt")): engines run --unsandboxed"
  SANDBOX=(--unsandboxed)
fi

[ "${CAL_UNSANDBOXED:-0}" = 1 ] && SANDBOX=(--unsandboxed)
BUDGET=${CAL_BUDGET:-370}
CANDS=()
CAND_DIRS=${CAL_CANDIDATES:-examples/silu_triton examples/fused_add_rmsnorm_triton}
[ "$CAND_DIRS" = none ] && CAND_DIRS=
for c in $CAND_DIRS; do CANDS+=(--candidate "$c"); done
collect() {  # label budget extra-args...
  local label=$1 budget=$2; shift 2
  echo "=== collect $label (budget ${budget}s, t=$(( $(date +%s) - T0 ))s) ==="
  timeout -k 10 $(( budget + 20 )) python3 -m hotfloat.cli qualify calibrate collect --device cuda --engine sglang \
    --stock "${CAL_STOCK:-3}" "${CANDS[@]}" \
    --keep-rounds "${CAL_KEEP:-20}" --budget "$budget" --boot-timeout "${CAL_BOOT:-330}" --seed "${CAL_SEED:-11}" \
    --out "$DEST/raw.json" "$@" > "$DEST/collect.log" 2>&1
  local rc=$?
  echo "collect $label rc=$rc in $(( $(date +%s) - T0 ))s"
  tail -n 25 "$DEST/collect.log"
  return $rc
}
collect "${SANDBOX[*]:-sandboxed}" "$BUDGET" "${SANDBOX[@]}"
rc=$?
rounds=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rounds"]))' "$DEST/raw.json" 2>/dev/null || echo 0)
if [ "$rc" != 0 ] && [ "$rounds" = 0 ] && [ ${#SANDBOX[@]} -eq 0 ] && (( $(date +%s) - T0 < BUDGET - 120 )); then
  echo "NOTE: the sandboxed collection failed before any round; keeping its log as collect.log.sandboxed, retrying --unsandboxed"
  mv "$DEST/collect.log" "$DEST/collect.log.sandboxed"
  collect unsandboxed $(( BUDGET - ($(date +%s) - T0) )) --unsandboxed
  rc=$?
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> "$DEST/env.txt" 2>&1

if [ -s "$DEST/raw.json" ]; then
  python3 - "$DEST/raw.json" <<'PY'
import json, statistics as st, sys
raw = json.load(open(sys.argv[1]))
names = raw["stock"] + list(raw["candidates"])
print("boot s:", {k: round(v, 1) for k, v in raw["boot_s"].items()}, "sandboxed:", raw["sandboxed"])
print("routed:", {k: sum(v.values()) for k, v in raw["routed"].items()}, "failed:", raw["failed"])
print("engine:", json.dumps(raw["engine_info"]))
rs = raw["rounds"]
print(f"{len(rs)} rounds")
for n in names:
    x = [r["pass_s"][n] for r in rs]
    if x:
        print(f"{n:3} median {1e3 * st.median(x):8.2f} ms  min {1e3 * min(x):8.2f}  max {1e3 * max(x):8.2f}  "
              f"cv {st.pstdev(x) / st.mean(x):.4f}  agree {st.mean(r['agree'].get(n, 0) for r in rs):.3f}")
PY
  left=$(( BUDGET + 35 - ($(date +%s) - T0) ))
  if (( left > 15 )); then
    timeout "$left" python3 -m hotfloat.cli qualify calibrate analyse "$DEST/raw.json" --boot-draws 0 \
      --out "$DEST/calibration.json" > "$DEST/analyse.txt" 2>&1
    echo "analyse rc=$?"; tail -n 2 "$DEST/analyse.txt"
  fi
fi
echo "calibrate total $(( $(date +%s) - T0 ))s" | tee "$DEST/summary.txt"
exit 0
