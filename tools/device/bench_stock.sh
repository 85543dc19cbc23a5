#!/usr/bin/env bash
# Device run for issue 24 / issue 17 item 5 (hotfloat bench beside sgl-kernel and FlashInfer on the H200):
#   1. in the background, FlashInfer's norm and activation kernels JIT-built with the device's nvcc, and every Triton
#      config of the three examples compiled (not launched) into the shared cache by a process pool;
#   2. `hotfloat bench` of examples/{silu,rmsnorm,fused_add_rmsnorm}_triton on the bench and decode shapes, with
#      sgl_kernel and flashinfer timed in the same run;
#   3. with the time left, the variant sweep (tools/device/bench_sweep.py), most informative shapes first.
# Every file is written straight into $OUT/bench_stock/ as it is produced, so a run cut short keeps what finished.
# Needs the SGLang payload (tools/device/engine_install.sh earlier in the same call).
# Run: tools/device/run_all.sh ... bench_stock:100   (the limit: BENCH_STOCK_S, else run_all's AREA_S, else 100; the
# sweep gets what the benches leave). Knobs: BENCH_BUDGET (s per measurement, default 0.02), BENCH_EXAMPLES, SWEEP
# (default 1, 0 when BENCH_EXAMPLES is set: step 1's builds and step 3 serve only the three examples), SWEEP_OPS,
# NCU_TARGETS ("op:T:H:impl ..." profiles with Nsight Compute; costs ~15 s each). MoE (issue 42):
#   BENCH_EXAMPLES="moe_triton moe_reduce_triton" bash tools/device/run_all.sh engine_install:90 bench_stock:300
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
D="$OUT/bench_stock"
mkdir -p "$D"
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
t0=$(date +%s)
LIMIT=${BENCH_STOCK_S:-${AREA_S:-100}}
SWEEP=${SWEEP:-$([ -n "${BENCH_EXAMPLES:-}" ] && echo 0 || echo 1)}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
stamp() { echo "[bench_stock +$(( $(date +%s) - t0 ))s] $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1 | tee "$D/gpu.txt"

# 1. Background builds: FlashInfer (nvcc; its JIT takes a file lock, so the bench's own first call waits for it
#    rather than building twice) and the Triton configs (compiled in workers that launch nothing).
fi_build() {  # NAME PYTHON-STATEMENTS
  timeout 90 python3 tools/device/flashinfer_build.py "$1" "$2" > "$D/flashinfer_build_$1.txt" 2>&1
  echo "rc=$?" >> "$D/flashinfer_build_$1.txt"
}
[ "$SWEEP" = 1 ] && fi_build act "import flashinfer.activation as a; a.silu_and_mul(x)" &
[ "$SWEEP" = 1 ] && fi_build norm "import flashinfer.norm as n; a, b = x[:, :512].contiguous(), x[:, 512:].contiguous(); n.rmsnorm(a, w); n.fused_add_rmsnorm(a, b, w)" &
[ "$SWEEP" = 1 ] && SWEEP_DEADLINE=0 SWEEP_WORKERS=8 timeout 80 python3 tools/device/bench_sweep.py "$D" > "$D/precompile.txt" 2>&1 &

# 2. hotfloat bench, one run per slot, every stock kernel in the same run.
BENCH='import sys; from hotfloat.cli.bench_cmd import bench; bench.main(sys.argv[1:], prog_name="hotfloat bench")'
python3 -c 'import matplotlib' 2>/dev/null && PLOT=1 || stamp "no matplotlib here: no --plot"
VERIFY='import sys; from hotfloat.cli.verify_cmd import verify; verify.main(sys.argv[1:], prog_name="hotfloat verify")'
for ex in ${BENCH_EXAMPLES:-silu_triton rmsnorm_triton fused_add_rmsnorm_triton}; do
  limit=$(( $(left) - 2 ))
  [ "$limit" -gt 10 ] || { stamp "no time left for $ex"; continue; }
  # Verified sandboxed first, in the same run: a bench row of a kernel that computes the wrong answer says nothing.
  # A reducing slot needs two ranks, and NCCL one GPU per rank: with one GPU they verify on gloo (CPU, interpreted).
  case $ex in *reduce*) where=(--world-size 2 --device cpu --dtype bf16) ;; *) where=(--device cuda --dtype bf16) ;; esac
  timeout $(( limit / 2 )) python3 -c "$VERIFY" "examples/$ex" "${where[@]}" --json > "$D/$ex.verify.json" 2> "$D/$ex.verify.stderr"
  stamp "verify $ex ${where[*]} rc=$? $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
ok = sum(x["status"] == "PASS" for x in r["rows"]); print(r["status"], ok, "of", len(r["rows"]), "rows PASS, sandboxed", r["sandboxed"])' \
    "$D/$ex.verify.json" 2>&1 | tail -n 1)"
  limit=$(( $(left) - 2 ))
  stamp "bench $ex (${limit}s left)"
  timeout "$limit" python3 -c "$BENCH" "examples/$ex" --device cuda --shapes all \
    --budget "${BENCH_BUDGET:-0.02}" --save "$D/$ex.json" ${PLOT:+--plot "$D/$ex.png"} > "$D/$ex.txt" 2>&1
  stamp "bench $ex rc=$?"
done
[ "$SWEEP" = 1 ] && stamp "builds: $(grep -hE 'built|rc=|Error' "$D"/flashinfer_build_*.txt | tr '\n' ' ' | cut -c1-200) | $(tail -n 1 "$D/precompile.txt")"

# 3. The variant sweep with the time left (10 s kept for the summary).
if [ "$(left)" -gt 25 ] && [ "$SWEEP" = 1 ]; then
  stamp "sweep ($(left)s left)"
  SWEEP_PRECOMPILE=0 SWEEP_DEADLINE=$(( $(left) - 20 )) timeout $(( $(left) - 6 )) \
    python3 tools/device/bench_sweep.py "$D" > "$D/sweep.log" 2>&1
  stamp "sweep rc=$?"
fi

# 4. Optional Nsight Compute profiles: NCU_TARGETS="fused:256:8192:ours fused:256:8192:flashinfer ..." (op:T:H:impl;
#    the third matching launch is profiled, caches flushed, clocks left alone).
if [ -n "${NCU_TARGETS:-}" ] && command -v ncu >/dev/null 2>&1; then
  M=gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
  M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
  M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_warps,launch__grid_size
  M=$M,launch__block_size,launch__waves_per_multiprocessor,lts__t_sector_hit_rate.pct
  for tgt in $NCU_TARGETS; do
    [ "$(left)" -gt 20 ] || break
    IFS=: read -r op t h impl <<< "$tgt"
    stamp "ncu $tgt"
    timeout 30 ncu --clock-control none --launch-skip 2 --launch-count 1 --csv --metrics "$M" \
      -k "regex:silu|rmsnorm|fused|act_and_mul|RMSNorm|Norm" \
      python3 tools/device/bench_profile.py "$op" "$t" "$h" "$impl" > "$D/ncu_${op}_${t}x${h}_${impl}.csv" 2>&1
  done
fi

# Summary: per slot and shape, ours / best stock (< 1: ours faster), x floor, % copy, every impl's time.
python3 - "$D" <<'PY' 2>&1 | tee "$D/summary.txt"
import json, os, sys
d = sys.argv[1]
for name in sorted(f for f in os.listdir(d) if f.endswith("_triton.json")):
    r = json.load(open(os.path.join(d, name)))
    c = r["ceilings"]
    print(f"{name}: {r['status']} copy {c['copy_Bps'] / 1e12:.2f} TB/s floor {c['floor_graph_us'] or 0:.2f} us; "
          + "; ".join(f"{s['name']} skipped ({s['reason'][:80]})" for s in r["skipped"]))
    for row in r["rows"]:
        times = " ".join(f"{i['name'].split(':')[0]}={(i['graph'] or i['cold'])['median_us']:.2f}"
                         f"{'' if i['check'] == 'PASS' else '!'}" for i in row["impls"] if i["cold"])
        rb = row["ratio_best"]
        print(f"  {'x'.join(map(str, row['dims'].values())):>10} ours/best {rb if rb is None else round(rb, 2)} "
              f"({row['best_stock']}) floor x{row['floor_multiple'] or 0:.2f} copy {100 * (row['frac_copy_bw'] or 0):.0f}%"
              f" | {times}")
PY
grep -E "^(silu|rmsnorm|fused) " "$D/sweep.log" 2>/dev/null | head -40
stamp "done"
