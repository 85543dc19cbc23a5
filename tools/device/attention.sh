#!/usr/bin/env bash
# Device run for issue 25 (attention.decode on the H200), about 150-250 s (give it 280). Needs the SGLang payload
# installed in the same call (tools/device/engine_install.sh): SGLang's own triton decode kernel is the stock row.
#  1. bench: examples/attention_decode_triton beside SGLang 0.5.13.post1's decode_attention_fwd on the slot's bench
#     shapes (bf16, uniform lengths, CUDA graphs over L2-overflowing input sets), with KV bytes/step and bandwidth;
#  2. verify the example on cuda (bf16 + fp16, every shape incl. 32k contexts and batch 256, graph capture and
#     replays), sandboxed when the sandbox starts here (else unsandboxed, and the JSON says so);
#  3. verify the four attention exploit bundles on cuda in parallel: each must FAIL;
#  4. FlashInfer decode, only if it imports and runs within 40 s (no flashinfer-cubin is carried).
# Writes $OUT/attention/: bench.json, verify-*.json, flashinfer.json, summary.txt (table). Standalone:
#   OUT=/tmp/o bash tools/device/attention.sh     In one lease: tools/device/run_all.sh attention:280
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
A="$OUT/attention"
mkdir -p "$A"
if ! . tools/device/sglang_env.sh; then
  echo "NOTE: no SGLang payload: the sglang-triton rows will be missing (errors in bench.json)"
  . tools/device/pyenv.sh
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used --format=csv
P="python3 tools/device/attention_proof.py"
start=$(date +%s)

timeout 75 $P bench "$A/bench.json" > "$A/bench.log" 2>&1
echo "bench exit=$? in $(( $(date +%s) - start ))s"

( for adv in attention_wrong_pages attention_ignores_lengths attention_reads_past_length attention_stale_kv; do
    timeout 40 $P verify "$A/verify-$adv.json" "tests/adversarial/bundles/$adv" --dtype bf16 --max-shapes 6 --timeout 30
  done ) > "$A/exploits.log" 2>&1 &
# one child per dtype, concurrently: the parent draws every input on one CPU thread, so two halve the wall time
timeout 170 $P verify "$A/verify-example-fp16.json" examples/attention_decode_triton --dtype fp16 --timeout 150 \
  > "$A/verify-fp16.log" 2>&1 &
timeout 170 $P verify "$A/verify-example-bf16.json" examples/attention_decode_triton --dtype bf16 --timeout 150 \
  > "$A/verify.log" 2>&1
echo "verify bf16 exit=$? in $(( $(date +%s) - start ))s"
wait
cat "$A/verify-fp16.log" >> "$A/verify.log"
echo "exploits done in $(( $(date +%s) - start ))s"

if [ $(( $(date +%s) - start )) -lt 190 ]; then
  timeout 40 $P bench "$A/flashinfer.json" --impl flashinfer > "$A/flashinfer.log" 2>&1
  echo "flashinfer exit=$? (124 = timed out, e.g. JIT compiling without cubins)"
fi

$P table "$A" | tee "$A/summary.txt"
grep -h "Error\|error" "$A"/*.log | sort | uniq -c | head -20
tail -n 60 "$A/verify.log"
cat "$A/exploits.log" | grep -v "^  .*PASS" | head -40
