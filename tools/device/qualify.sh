#!/usr/bin/env bash
# The transformers stand-in on the H200 (no SGLang payload needed): the graph-decode check of
# tools/device/qualify_graphs.py (graph vs static vs eager tokens, tokens/s per mode, refusal of a host-syncing
# kernel), then a resident-engine qualification of examples/silu_triton with `--engine transformers` (B, C, B' booted
# once, rounds in secret order). The SGLang qualification is tools/device/qualify_sglang.sh. About 150 s.
# Writes $OUT/qualify/{env.txt,graphs.log,silu_triton.json,silu_triton.evidence.json,silu_triton.stderr}.
set -u
cd "$(dirname "$0")/../.."
DEST="${OUT:-/tmp/out}/qualify"
mkdir -p "$DEST"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv; } > "$DEST/env.txt" 2>&1
. tools/device/pyenv.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SANDBOX=()
if ! command -v bwrap >/dev/null 2>&1 || ! command -v prlimit >/dev/null 2>&1; then
  echo "NOTE: bwrap/prlimit missing on this machine: engine processes run UNSANDBOXED (the CPU suite covers the sandbox)"
  SANDBOX=(--unsandboxed)
fi

timeout 45 python3 tools/device/qualify_graphs.py > "$DEST/graphs.log" 2>&1
echo "graph check exit $?"
cat "$DEST/graphs.log"

timeout 100 python3 -m hotfloat.cli qualify run examples/silu_triton --device cuda --engine transformers --seed 2 \
  --look-rounds 6 --max-looks 2 --evidence "$DEST/silu_triton.evidence.json" --json "${SANDBOX[@]}" \
  > "$DEST/silu_triton.json" 2> "$DEST/silu_triton.stderr"
echo "silu_triton qualification exit $? (0 PASS, 1 FAIL, 5 NO_DECISION)"
cat "$DEST/silu_triton.json"; tail -n 5 "$DEST/silu_triton.stderr"
