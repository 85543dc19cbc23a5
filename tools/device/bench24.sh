#!/usr/bin/env bash
# Device run for issues 24 and 25 in <= 240 s: the examples beside every stock kernel, the variant sweep, and
# Nsight Compute profiles of the rows that miss a target.
#   1. background (CPU): FlashInfer's JIT builds (activation, norms, and the tensor-core batch decode at head dims 64
#      and 128, through the bench's own adapter) and every Triton config of the sweep, compiled without launching;
#   2. `hotfloat bench --shapes all` of examples/{silu,rmsnorm,fused_add_rmsnorm}_triton beside torch, sgl_kernel and
#      flashinfer, then examples/attention_decode_triton beside SGLang's triton decode kernel and FlashInfer's batch
#      decode (FlashInfer left out, with a note, when its build has not finished by then: a bench cut by its timeout
#      saves nothing);
#   3. `ncu --clock-control none` of a few launches per row that misses a target (tools/device/bench24_report.py picks
#      them; NCU_MAX runs of at most NCU_S seconds each);
#   4. the decode-shape sweep (tools/device/bench_sweep.py) with the time left;
#   5. the summary table (bench24_report.py table), at the end of the log and in summary.txt.
# Every file lands in $OUT/bench24/ as it is written. Needs the SGLang payload installed in the same call:
#   bash tools/device/run_all.sh engine_install:60 bench24:240
# Knobs: BENCH24_S (seconds for the whole script, default 236), BENCH_BUDGET (s per measurement, 0.02), NCU_MAX (4), NCU_S (25).
# Dry run on a CPU box (interpreter, no FlashInfer/sweep/ncu; checks every command line): BENCH24_DEVICE=cpu
#   PYTHON=.venv-engine/bin/python OUT=/tmp/o bash tools/device/bench24.sh
set -u
export PYTHONUNBUFFERED=1
t0=$(date +%s)
LIMIT=${BENCH24_S:-236}  # run_all's limit less a margin for its own start and packing
OUT=${OUT:-/tmp/out}
D="$OUT/bench24"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
DEVICE=${BENCH24_DEVICE:-cuda}
PY=${PYTHON:-python3}
if [ "$DEVICE" = cuda ]; then
  . tools/device/sglang_env.sh || exit 1
else
  export TRITON_INTERPRET=1 PYTHONPATH="$PWD/libs/hotfloat${PYTHONPATH:+:$PYTHONPATH}"
fi
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
stamp() { echo "[bench24 +$(( $(date +%s) - t0 ))s] $*"; }
cap() {  # MAX RESERVE: seconds a step may take, keeping RESERVE for the steps after it
  local l=$(( $(left) - $2 ))
  echo $(( l < $1 ? l : $1 ))
}

if [ "$DEVICE" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1 | tee "$D/gpu.txt"

  # 1. Background builds. FlashInfer's JIT takes a file lock per module, so a bench that reaches a module still
  #    being built waits for it instead of building it twice.
  fi_build() {  # NAME LIMIT PYTHON-STATEMENTS
    timeout "$2" "$PY" tools/device/flashinfer_build.py "$1" "$3" > "$D/flashinfer_build_$1.txt" 2>&1
    echo "rc=$?" >> "$D/flashinfer_build_$1.txt"
  }
  fi_build act 90 "import flashinfer.activation as a; a.silu_and_mul(x)" &
  fi_build norm 90 "import flashinfer.norm as n; a, b = x[:, :512].contiguous(), x[:, 512:].contiguous(); n.rmsnorm(a, w); n.fused_add_rmsnorm(a, b, w)" &
  fi_build attn 150 "
from hotfloat.bench.stock import flashinfer_decode
from hotfloat.slots import get_slot
slot, s = get_slot('attention.decode'), flashinfer_decode()
assert not isinstance(s, str), s
for hq, hkv, d in ((4, 1, 64), (32, 8, 128)):  # the bench's head dims; every bench group (4, 7) takes tensor cores
    dims = {'B': 2, 'S': 16, 'P': 32, 'N': 32, 'Hq': hq, 'Hkv': hkv, 'D': d}
    t = {k: v.cuda() for k, v in slot.make_inputs(dims, torch.bfloat16, torch.Generator().manual_seed(0)).items()}
    t['sm_scale'] = d ** -0.5
    s.fn(t | s.prepare(t).extra)
" &
  SWEEP_DEADLINE=0 SWEEP_WORKERS=6 timeout 80 "$PY" tools/device/bench_sweep.py "$D" > "$D/precompile.txt" 2>&1 &
fi

# 2. hotfloat bench, one run per slot, every stock kernel in the same run. --unsandboxed: the benches must share the
#    FlashInfer builds that step 1 is still writing to $HOTFLOAT_ENGINE_ROOT/cache (a sandboxed child gets a copy of
#    that cache taken as it starts, and would rebuild what was unfinished within its limit); the bundles are this
#    repository's examples. --timeout ends the run inside its limit, so the bench kills its own child (an unsandboxed
#    child left behind by `timeout` would keep the GPU busy for the steps after it).
BENCH='import sys; from hotfloat.cli.bench_cmd import bench; bench.main(sys.argv[1:], prog_name="hotfloat bench")'
bench() {  # EXAMPLE MAX RESERVE [--stock MODULE ...]
  local ex=$1 limit
  limit=$(cap "$2" "$3"); shift 3
  [ "$limit" -gt 10 ] || { stamp "no time left for $ex"; return; }
  stamp "bench $ex (limit ${limit}s) $*"
  timeout "$limit" "$PY" -c "$BENCH" "examples/$ex" --device "$DEVICE" --shapes all --budget "${BENCH_BUDGET:-0.02}" \
    --unsandboxed --timeout $(( limit > 30 ? limit - 20 : limit / 2 )) \
    --save "$D/$ex.json" --plot "$D/$ex.png" "$@" > "$D/$ex.txt" 2>&1
  local rc=$?
  stamp "bench $ex rc=$rc$([ $rc = 124 ] && echo ': cut by its limit, no report')"
}
bench silu_triton 45 150
bench rmsnorm_triton 50 115
bench fused_add_rmsnorm_triton 70 70
stock=(--stock sglang --stock flashinfer)
if [ "$DEVICE" = cuda ]; then
  while ! grep -q '^rc=' "$D/flashinfer_build_attn.txt" 2>/dev/null && [ "$(left)" -gt 115 ]; do sleep 2; done
  if ! grep -q '^rc=0' "$D/flashinfer_build_attn.txt" 2>/dev/null; then
    stamp "FlashInfer's batch decode not built yet ($(tail -n 1 "$D/flashinfer_build_attn.txt" 2>/dev/null)): attention bench without it"
    stock=(--stock sglang)
  fi
  stamp "builds: $(grep -hE 'built|rc=|Error' "$D"/flashinfer_build_*.txt | tr '\n' ' ' | cut -c1-300) | $(tail -n 1 "$D/precompile.txt")"
fi
bench attention_decode_triton 75 45 "${stock[@]}"

# 3. Nsight Compute on the rows that miss a target (the third launch onward of three; caches flushed, clocks alone).
"$PY" tools/device/bench24_report.py misses "$D" --limit "${NCU_MAX:-4}" > "$D/ncu_targets.txt"
stamp "profile targets: $(tr '\n' ' ' < "$D/ncu_targets.txt")"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -n 1)
M=gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_warps,launch__grid_size
M=$M,launch__block_size,launch__waves_per_multiprocessor,lts__t_sector_hit_rate.pct
while IFS=: read -r op t h impl; do
  [ -n "$op" ] || continue
  limit=$(cap "${NCU_S:-25}" 35)
  [ "$limit" -gt 8 ] || { stamp "no time left for ncu $op:$t:$h:$impl"; break; }
  f="$D/ncu_${op}_${t}x${h}_${impl}.csv"
  if [ "$DEVICE" != cuda ]; then  # the dry run checks the profiled command itself
    timeout "$limit" "$PY" tools/device/bench_profile.py "$op" "$t" "$h" "$impl" cpu < /dev/null > "$f" 2>&1
  elif [ -n "$NCU" ]; then
    timeout "$limit" "$NCU" --clock-control none --launch-skip 1 --launch-count 2 --csv --metrics "$M" \
      -k "regex:silu|rmsnorm|fused|act_and_mul|RMSNorm|Norm" \
      "$PY" tools/device/bench_profile.py "$op" "$t" "$h" "$impl" < /dev/null > "$f" 2>&1
  else
    echo "ncu not found on PATH or under /opt/nvidia/nsight-compute" > "$f"
  fi
  stamp "ncu $op:$t:$h:$impl rc=$?"
done < "$D/ncu_targets.txt"

# 4. The decode-shape sweep with the time left (12 s kept for the summary).
if [ "$DEVICE" = cuda ] && [ "$(left)" -gt 30 ]; then
  stamp "sweep ($(left)s left)"
  SWEEP_PRECOMPILE=0 SWEEP_DEADLINE=$(( $(left) - 22 )) timeout $(( $(left) - 12 )) \
    "$PY" tools/device/bench_sweep.py "$D" > "$D/sweep.log" 2>&1
  stamp "sweep rc=$?"
fi

# 5. The summary.
grep -h "Error\|error:" "$D"/*.txt 2>/dev/null | sort | uniq -c | head -20
"$PY" tools/device/bench24_report.py table "$D" 2>&1 | tee "$D/summary.txt"
stamp "done"
