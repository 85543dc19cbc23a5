#!/usr/bin/env bash
# Raw data for the resident-engine rule's calibration on the H200 (SGLang): boots three stock engines B1 B2 B3 and a
# candidate engine C (examples/silu_triton armed), concurrently, as sandboxed resident engines on the generated
# Qwen2-0.5B-shaped model, warms them up, then serves rounds (one pass of the `sglang` mix per engine, random order
# per round) until the wall budget is spent, rewriting $OUT/calibrate/raw.json after every round. The analysis
# (false PASS over B-vs-B' draws, power at injected 1/2/5%, minutes per qualification, the rule chosen) runs on the
# raw file afterwards, anywhere:  hotfloat qualify calibrate analyse raw.json --out docs/calibration-h200.json
# A quick analysis also runs here at the end (fewer bootstrap draws) so the log shows the numbers.
# Run: bash tools/device/run_all.sh engine_install:90 calibrate:420   (CAL_BUDGET=330 s of collection, boots
# included; CAL_STOCK=3; CAL_SEED=11). Falls back to --unsandboxed (NOTE line) when the sandbox cannot be built.
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

BUDGET=${CAL_BUDGET:-330}
echo "=== collect (budget ${BUDGET}s, t=$(( $(date +%s) - T0 ))s) ==="
timeout -k 10 $(( BUDGET + 40 )) python3 -m hotfloat.cli qualify calibrate collect --device cuda --engine sglang \
  --stock "${CAL_STOCK:-3}" --candidate examples/silu_triton --budget "$BUDGET" --seed "${CAL_SEED:-11}" \
  --out "$DEST/raw.json" "${SANDBOX[@]}" > "$DEST/collect.log" 2>&1
rc=$?
echo "collect rc=$rc in $(( $(date +%s) - T0 ))s"
tail -n 25 "$DEST/collect.log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> "$DEST/env.txt" 2>&1

if [ -s "$DEST/raw.json" ]; then
  python3 - "$DEST/raw.json" <<'PY'
import json, statistics as st, sys
raw = json.load(open(sys.argv[1]))
names = raw["stock"] + ([raw["candidate"]] if raw["candidate"] else [])
print("boot s:", {k: round(v, 1) for k, v in raw["boot_s"].items()}, "sandboxed:", raw["sandboxed"])
print("engine:", json.dumps(raw["engine_info"]))
rs = raw["rounds"]
print(f"{len(rs)} rounds")
for n in names:
    x = [r["pass_s"][n] for r in rs]
    if x:
        print(f"{n:3} median {1e3 * st.median(x):8.2f} ms  min {1e3 * min(x):8.2f}  max {1e3 * max(x):8.2f}  "
              f"cv {st.pstdev(x) / st.mean(x):.4f}  agree {st.mean(r['agree'].get(n, 0) for r in rs):.3f}")
PY
  timeout 120 python3 -m hotfloat.cli qualify calibrate analyse "$DEST/raw.json" --boot-draws 200 \
    --out "$DEST/calibration.json" > "$DEST/analyse.txt" 2>&1
  echo "analyse rc=$?"; tail -n 3 "$DEST/analyse.txt"
fi
echo "calibrate total $(( $(date +%s) - T0 ))s" | tee "$DEST/summary.txt"
exit 0
