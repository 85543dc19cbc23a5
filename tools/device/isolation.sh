#!/usr/bin/env bash
# GPU isolation on the H200 (issue 31): what the watchdog sees (tools/device/isolation_probe.py), then two quick
# sandboxed qualifications on the transformers engine over CUDA (tiny preset: seconds, not minutes): the exact
# examples/silu_triton and the GPU-sharing adversary tools/device/adversaries/gpu_share_spinner. Results under
# $OUT/isolation/ (ISO_TINY= skips the two). Run after engine_install (bubblewrap and this tree's packages): run_all.sh engine_install:60 isolation:120
set -u -o pipefail
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
DEST="${OUT:-/tmp/out}/isolation"
mkdir -p "$DEST"
export PYTHONUNBUFFERED=1 HOTFLOAT_ENGINE_LOG_DIR="$DEST"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$DEST/env.txt" 2>&1
timeout -k 5 60 python3 tools/device/isolation_probe.py > "$DEST/probe.json" 2> "$DEST/probe.err"
echo "probe rc=$?"; tail -n 8 "$DEST/probe.err"
for b in ${ISO_TINY-examples/silu_triton tools/device/adversaries/gpu_share_spinner}; do
  tag=$(basename "$b")
  timeout -k 5 150 python3 -m hotfloat.cli qualify run "$b" --device cuda --engine transformers --preset tiny \
    --shapes tiny --dtype fp32 --look-rounds 4 --max-looks 1 --seed 3 --boot-timeout 120 --json \
    --evidence "$DEST/evidence-tiny-$tag.json" > "$DEST/run-tiny-$tag.json" 2> "$DEST/run-tiny-$tag.err"
  echo "tiny $tag rc=$? $(head -c 600 "$DEST/run-tiny-$tag.json")"
  tail -n 3 "$DEST/run-tiny-$tag.err"
done
