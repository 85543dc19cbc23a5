#!/usr/bin/env bash
# Runs the named device scripts (default: all but perf) in one lease, each under its own time limit, and packs
# every result into $OUT/results.tgz: the device returns at most 8 files, so one archive carries them all.
# Usage on the device machine: tools/device/run_all.sh [area:seconds ...]   e.g. env:60 verify:150 fused:150
# (fused: the norm.fused_add_rmsnorm bench + verify, tools/device/fused.sh; opt-in like perf). Each script sees its
# area's limit as AREA_S (bench_stock and prefill size their steps by it).
set -u
cd "$(dirname "$0")/../.."
real_out=${OUT:?OUT must be set by the device tool}
stage=$(mktemp -d)
areas=("$@")
[ ${#areas[@]} -gt 0 ] || areas=(env:60 verify:150 native:90 collective:60 qualify:240)
export PYTHONUNBUFFERED=1
for spec in "${areas[@]}"; do
  area=${spec%%:*}; limit=${spec##*:}
  script=tools/device/$area.sh
  mkdir -p "$stage/$area"
  if [ ! -f "$script" ]; then echo "no $script" | tee "$stage/$area/missing.txt"; continue; fi
  echo "=== $area (limit ${limit}s) ==="
  start=$(date +%s)
  OUT=$stage AREA_S=$limit timeout -k 5 "$limit" bash "$script" >"$stage/$area/run.log" 2>&1
  rc=$?
  echo "$area rc=$rc in $(( $(date +%s) - start ))s" | tee -a "$stage/summary.txt"
  tail -n 25 "$stage/$area/run.log"
  # Packed after every area, so a lease that ends mid-run still returns what finished.
  tar czf "$real_out/results.tgz" -C "$stage" .
  cp "$stage/summary.txt" "$real_out/summary.txt" 2>/dev/null
done
