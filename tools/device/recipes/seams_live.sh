#!/usr/bin/env bash
# seams_live: SGLang engines booted with armed bundles: every seam routes, a broken kernel shows.
# The live seam-activation tier on the H200 (issue 17 item 4): SGLang's offline Engine on a random-weight tiny Qwen2,
# seven boots at once on the one GPU (null-armed, exact, broken-silu, broken-rmsnorm, broken-fused, torch-math,
# missing-bundle; JIT builds are file-locked, so the first boot to need a kernel builds it for all).
# Needs engine_install.sh earlier in the same call:
#   bash tools/device/run.sh engine_install:90 seams_live:240
# Writes $OUT/seams_live/live.json, the table (table.txt) and each arm's spec, engine log and seam reports.
set -u -o pipefail
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
OUT=${OUT:-out/device}
dest="$OUT/seams_live"
mkdir -p "$dest"
model="$HOTFLOAT_ENGINE_ROOT/models/tiny-qwen2"
rm -rf "$model"
start=$(date +%s)
# A cold boot (imports ~20 s, kernel JIT ~60 s, CUDA graphs for bs 1/2/4, first generate's Triton JIT) ~150 s.
timeout -k 10 "${SEAMS_LIVE_LIMIT_S:-230}" python3 tools/seams_live.py --tiny-model "$model" --out "$dest" \
  --boot-timeout "${SEAMS_LIVE_BOOT_TIMEOUT_S:-200}" 2>&1 | tee "$dest/table.txt"
rc=${PIPESTATUS[0]}
echo "seams_live: rc=$rc in $(( $(date +%s) - start )) s"
for d in "$dest"/arms/*/; do  # each arm's last log lines, for a failure read from the summary alone
  [ -f "$d/engine.log" ] || continue
  echo "--- $(basename "$d"): $(tail -n 3 "$d/engine.log" | tr '\n' ' ' | cut -c1-400)"
done
nvidia-smi --query-gpu=memory.used --format=csv,noheader 2>/dev/null | sed 's/^/GPU memory used after the area: /'
exit "$rc"
