#!/usr/bin/env bash
# calibrate: raw null units for the timing rule's calibration: stock engines in boot waves (CAL_*).
# Raw data for the resident-engine rule's calibration on a GPU model (the H200, the H100; SGLang), in boot waves. A wave boots, on every GPU
# it uses (CAL_GPUS, default all visible; one collection per GPU, each on its own slice of the CPUs), CAL_STOCK stock
# engines (default 6), the handicapped stock engines CAL_HANDICAP names ("EFFECT:COUNT ...", e.g. "0.02:2": two
# engines a stock C is 2% faster than, the positive control) and one engine per CAL_CANDIDATES bundle (default none),
# as sandboxed resident engines on the qualification defaults; serves CAL_ROUNDS rounds (default 10: a qualification
# under the calibrated rule decides within 10) and writes $OUT/calibrate/raw-<seed>.json, one boot each. CAL_WAVES
# waves (default 1) run one after the other; a boot's seed is CAL_SEED + 100 x wave + gpu (CAL_SEED default: drawn
# from the clock, so calls differ in prompts and serving orders; each raw file records its seed).
# Short boots: the checkpoint is generated once before the first wave, and the first wave's B1 on the first GPU (a
# stock engine: no candidate code ever ran in its sandbox) exports its JIT caches to $HOTFLOAT_ENGINE_ROOT/cache,
# which seeds every engine booted after it. Six stock engines make two null qualifications per boot; 4 stock + 2
# handicapped one null qualification and one positive control; 2 stock + 4 handicapped two positive controls (the
# H200; an H100 holds three 8B engines, one unit a boot: "3" or "1+0.02:2").
# Afterwards, anywhere (no device):
#   hotfloat qualify calibrate analyse RAW... --preregistered docs/calibration-h200.preregistered.json --out docs/calibration-h200.json
# A quick analysis of this call's raw files runs here at the end, so the log shows the counts.
# Run: CAL_PLAN="3 3 1+0.02:2" CAL_WAVES=fill bash tools/device/run.sh engine_install:40 calibrate:552
# CAL_PLAN names the waves' compositions in turn (instead of CAL_STOCK and CAL_HANDICAP; "3 3 1+0.02:2": two null
# units, then a positive control; tools/device/helpers/cal_waves.py); CAL_WAVES=fill starts waves while the recipe's
# limit holds one more seeded wave, each wave's budget cut to the time left. On the H100 a seeded wave of three
# engines takes 90-98 s, a fresh machine's first about 120 s plus 26 s for the checkpoint (session 33). CAL_BUDGET
# 400 s per wave, boots included; CAL_BOOT 300 s; CAL_KEEP kept rounds, default 0; CAL_UNSANDBOXED=1 skips the
# sandbox; CAL_ATTENTION names the attention backend (default the GPU's: hotfloat.qualify.options.default_attention).
set -u -o pipefail
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
. tools/device/helpers/flashinfer_prebuilt.sh || exit 1  # FlashInfer's modules built ahead of time, when carried
DEST="${OUT:-/tmp/out}/calibrate"
mkdir -p "$DEST"
T0=$(date +%s)
export HOTFLOAT_ENGINE_LOG_DIR="$DEST" HOTFLOAT_MODEL_CACHE=/tmp/hotfloat-models PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,power.draw,memory.used --format=csv; nproc; } \
  > "$DEST/env.txt" 2>&1
at() { echo "t=$(( $(date +%s) - T0 ))s"; }

SANDBOX=()
if ! python3 -c 'from hotfloat.qualify.host import engine_policy; from hotfloat.sandbox import ensure_available
ensure_available(engine_policy("cuda", "sglang"))' > "$DEST/sandbox_check.txt" 2>&1; then
  echo "NOTE: sandbox unavailable here ($(tail -c 300 "$DEST/sandbox_check.txt")): engines run --unsandboxed"
  SANDBOX=(--unsandboxed)
fi
[ "${CAL_UNSANDBOXED:-0}" = 1 ] && SANDBOX=(--unsandboxed)
PLAN=${CAL_PLAN:-${CAL_STOCK:-6}$(for h in ${CAL_HANDICAP:-}; do printf '+%s' "$h"; done)}
python3 tools/device/helpers/cal_waves.py "$PLAN" 1 1 1 >/dev/null 2>"$DEST/plan.err"
[ $? = 2 ] && { cat "$DEST/plan.err"; exit 2; }
EXTRA=()
# Sized against 1100 ms, not the 1300 ms pass: torch.cuda._sleep counts cycles at the H200's nominal 1980 MHz while
# its SMs run at 1575-1875 MHz under the 8B load, so each delay lasts about 1.2x its nominal length. The analysis
# reports the effect each positive control really had; CAL_HANDICAP_PASS_MS corrects the size after a wave.
[[ $PLAN == *+* ]] && EXTRA+=(--handicap-pass-ms "${CAL_HANDICAP_PASS_MS:-1100}")
for c in ${CAL_CANDIDATES:-}; do [ "$c" = none ] || EXTRA+=(--candidate "$c"); done
[ -n "${CAL_ATTENTION:-}" ] && EXTRA+=(--attention "$CAL_ATTENTION")  # a record belongs to one attention backend
GPUS=${CAL_GPUS:-$(nvidia-smi -L | wc -l)}
CPUS=$(nproc)
PER=$(( CPUS / GPUS ))
BUDGET=${CAL_BUDGET:-400}
SEED=${CAL_SEED:-$(( $(date +%s) % 1000000 ))}

echo "=== checkpoint ($(at)) ==="
python3 -c 'from hotfloat.qualify import QualifyOptions; from hotfloat.qualify.checkpoint import ensure
e = QualifyOptions.for_device("cuda").engine(); print(ensure(e.preset, e.dtype, e.weight_seed))' || exit 1
echo "checkpoint ready ($(at)); $GPUS GPU(s), $PER CPUs each; waves: $PLAN in turn, ${EXTRA[*]:-no other engines}"

WAVES=${CAL_WAVES:-1}
[ "$WAVES" = fill ] && WAVES=1000000
durations=()
w=0
while [ $(( w += 1 )) -le "$WAVES" ]; do
  left=$(( ${AREA_S:-100000} - $(date +%s) + T0 ))
  if ! wave=$(python3 tools/device/helpers/cal_waves.py "$PLAN" "$w" "$left" "$BUDGET" "${durations[@]}"); then
    echo "no wave $w: ${left}s left, earlier waves ${durations[*]:-none} s"
    break
  fi
  read -r -a COMP <<< "${wave% *}"
  WBUDGET=${wave##* }
  echo "=== wave $w ($(at)): ${COMP[*]}, budget ${WBUDGET}s ==="
  ws=$(date +%s)
  pids=()
  raws=()
  for g in $(seq 0 $(( GPUS - 1 ))); do
    raw="$DEST/raw-$(( SEED + 100 * w + g )).json"
    raws+=("$raw")
    export_args=()
    [ "$w" = 1 ] && [ "$g" = 0 ] && export_args=(--export-cache "$HOTFLOAT_ENGINE_ROOT/cache")
    CUDA_VISIBLE_DEVICES=$g timeout -k 10 $(( WBUDGET + 20 )) taskset -c $(( g * PER ))-$(( (g + 1) * PER - 1 )) \
      python3 -m hotfloat.cli qualify calibrate collect --device cuda --engine sglang "${COMP[@]}" \
      "${EXTRA[@]}" --max-rounds "${CAL_ROUNDS:-10}" --keep-rounds "${CAL_KEEP:-0}" --budget "$WBUDGET" \
      --boot-timeout "${CAL_BOOT:-300}" --seed $(( SEED + 100 * w + g )) --out "$raw" \
      "${export_args[@]}" "${SANDBOX[@]}" > "$DEST/collect-w$w-g$g.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; rc=$?
    echo "wave $w gpu $i: rc=$rc; $(tail -n 1 "$DEST/collect-w$w-g$i.log")"
    grep -h "cache export\|dropped\|failed" "$DEST/collect-w$w-g$i.log" | tail -n 3
  done
  python3 - "${raws[@]}" <<'PY'
import json, statistics as st, sys
for path in sys.argv[1:]:
    try:
        raw = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"{path}: unreadable ({e})"); continue
    rs, boots = raw["rounds"], raw["boot_s"].values()
    med = {n: st.median(r["pass_s"][n] for r in rs) for n in raw["boot_s"]} if rs else {}
    print(f"{path.rsplit('/', 1)[-1]}: boots {min(boots):.1f}-{max(boots):.1f} s, {len(rs)} rounds "
          f"({(rs[-1]['t'] - rs[0]['t']) / max(len(rs) - 1, 1):.1f} s each), sandboxed {raw['sandboxed']}, handicap_us "
          f"{ {k: round(v, 2) for k, v in raw.get('handicap_us', {}).items()} }, medians "
          + " ".join(f"{n} {1e3 * v:.1f}" for n, v in med.items()))
PY
  durations+=($(( $(date +%s) - ws )))
  echo "wave $w took ${durations[-1]}s ($(at))"
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> "$DEST/env.txt" 2>&1

mine=$(ls "$DEST"/raw-*.json 2>/dev/null)
# This call's raws under the GPU model's pre-registered rule (docs/calibration-<model>.preregistered.json); the record
# itself is analysed here, from every committed raw of one engine configuration.
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -o 'H[0-9]\+' | tr 'A-Z' 'a-z')
if [ -n "$mine" ] && [ -f "docs/calibration-${model:-none}.preregistered.json" ]; then
  timeout 120 python3 -m hotfloat.cli qualify calibrate analyse $mine \
    --preregistered "docs/calibration-$model.preregistered.json" --sims 0 > "$DEST/analyse.txt" 2>&1
  echo "analyse rc=$?"; tail -n 16 "$DEST/analyse.txt"
fi
echo "calibrate total $(( $(date +%s) - T0 ))s" | tee "$DEST/summary.txt"
exit 0
