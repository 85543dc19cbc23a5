#!/usr/bin/env bash
# The short attention.decode device run (<= 60 s): `verify --device cuda` of examples/attention_decode_triton,
# bf16 (all 12 shapes) and fp16 (first 8) in two concurrent children, one eager call per shape (the full 3-trial
# eager run passed on the H200 in device call 1) and, per shape, a CUDA-graph capture plus three replays on fresh
# inputs: the part that call 1 failed because the drawn scale changed under a captured graph (now drawn once per
# case). Sandboxed when the sandbox starts here, else unsandboxed with a note. Writes
# $OUT/attention_graphs/{verify-*.json,*.log,summary.txt}.
#   tools/device/run_all.sh engine_install:90 attention_graphs:60
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
A="${OUT:-/tmp/out}/attention_graphs"
mkdir -p "$A"
. tools/device/sglang_env.sh >/dev/null || . tools/device/pyenv.sh
P="python3 tools/device/attention_proof.py"
start=$(date +%s)
# fp16 on the first 8 shapes (batch <= 8, both 32k contexts), bf16 on all 12: about equal halves of the work
timeout 55 $P verify "$A/verify-example-fp16.json" examples/attention_decode_triton --dtype fp16 --trials 1 \
  --max-shapes 8 --timeout 50 > "$A/verify-fp16.log" 2>&1 &
timeout 55 $P verify "$A/verify-example-bf16.json" examples/attention_decode_triton --dtype bf16 --trials 1 \
  --timeout 50 > "$A/verify-bf16.log" 2>&1
wait
echo "verify done in $(( $(date +%s) - start ))s"
$P table "$A" | tee "$A/summary.txt"
grep -h "graph\|FAIL\|sandbox" "$A"/verify-*.log | head -40
