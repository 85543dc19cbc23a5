#!/usr/bin/env bash
# Device run for issue 24 / issue 17 item 5 (hotfloat bench beside sgl-kernel and FlashInfer on the H200):
#   1. FlashInfer's norm and activation kernels JIT-built with the device's nvcc, in the background (two processes);
#   2. the variant sweep of the three example kernels (tools/device/bench_sweep.py; compiles in a process pool first);
#   3. `hotfloat bench` of examples/{silu,rmsnorm,fused_add_rmsnorm}_triton on the bench and decode shapes, with
#      sgl_kernel and flashinfer timed in the same run (flashinfer left out, with its build log, when its build failed).
# Everything lands in $OUT/bench_stock/bench_stock.tgz (JSON reports, markdown tables, plots, sweep, logs) plus
# summary.txt; the last lines printed are the summary. Needs the SGLang payload (tools/device/engine_install.sh run
# first in the same call). Run: tools/device/run_all.sh engine_install:... bench_stock:150
# Knobs: SWEEP_S (sweep timing deadline, default 40; 0 skips the sweep), SWEEP_OPS, BENCH_BUDGET (s per measurement,
# default 0.04), BENCH_EXAMPLES (default: the three), FI_BUILD_S (default 100).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
D="$OUT/bench_stock"
W=$(mktemp -d)
mkdir -p "$D"
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
t0=$(date +%s)
stamp() { echo "[bench_stock +$(( $(date +%s) - t0 ))s] $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1 | tee "$W/gpu.txt"
python3 - <<'PY' 2>&1 | tee "$W/versions.txt"
import importlib.metadata as md
import torch, triton
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)
for dist in ("sglang-kernel", "sgl-kernel", "flashinfer-python", "apache-tvm-ffi"):
    try:
        print(dist, md.version(dist))
    except md.PackageNotFoundError:
        pass
try:
    import sgl_kernel
    print("sgl_kernel imports from", sgl_kernel.__file__)
except Exception as e:
    print("sgl_kernel import FAILED:", type(e).__name__, str(e)[:300])
PY
command -v nvcc && nvcc --version | tail -1

# 1. FlashInfer JIT builds, in the background while the sweep uses the GPU.
fi_build() {  # NAME PYTHON-STATEMENTS
  timeout "${FI_BUILD_S:-100}" python3 - "$1" "$2" > "$W/flashinfer_build_$1.txt" 2>&1 <<'PY'
import sys, time, torch
name, code = sys.argv[1], sys.argv[2]
start = time.time()
x = torch.randn(4, 1024, device="cuda", dtype=torch.bfloat16)
w = torch.ones(512, device="cuda", dtype=torch.bfloat16)
exec(code)
torch.cuda.synchronize()
print(f"flashinfer {name}: built and ran in {time.time() - start:.1f}s")
PY
  echo "rc=$?" >> "$W/flashinfer_build_$1.txt"
}
fi_build norm "import flashinfer.norm as n; a, b = x[:, :512].contiguous(), x[:, 512:].contiguous(); n.rmsnorm(a, w); n.fused_add_rmsnorm(a, b, w)" &
fi_norm=$!
fi_build act "import flashinfer.activation as a; a.silu_and_mul(x)" &
fi_act=$!

# 2. The variant sweep.
if [ "${SWEEP_S:-40}" != 0 ]; then
  stamp "sweep"
  SWEEP_DEADLINE=${SWEEP_S:-40} timeout $(( ${SWEEP_S:-40} + 50 )) python3 tools/device/bench_sweep.py "$W" \
    > "$W/sweep.log" 2>&1
  stamp "sweep rc=$?"
fi

wait $fi_norm $fi_act
STOCK="--stock sgl_kernel --stock flashinfer"
# A build that failed fails again fast in the bench's probe, which records the reason in the report; one that ran out of
# time would start over there, so flashinfer is left out of the bench instead (the build log says why).
if grep -q "^rc=124" "$W/flashinfer_build_norm.txt" "$W/flashinfer_build_act.txt"; then
  STOCK="--stock sgl_kernel"
  echo "flashinfer build timed out: bench runs without it (see flashinfer_build_*.txt)" | tee "$W/flashinfer_skipped.txt"
fi
stamp "flashinfer: $(cat "$W"/flashinfer_build_*.txt | grep -E 'built|rc=|Error' | tr '\n' ' ' | cut -c1-300)"

# 3. hotfloat bench, one run per slot, every stock kernel in the same run.
BENCH='import sys; from hotfloat.cli.bench_cmd import bench; bench.main(sys.argv[1:], prog_name="hotfloat bench")'
for ex in ${BENCH_EXAMPLES:-silu_triton rmsnorm_triton fused_add_rmsnorm_triton}; do
  stamp "bench $ex"
  # shellcheck disable=SC2086
  timeout 80 python3 -c "$BENCH" "examples/$ex" --device cuda --shapes all --budget "${BENCH_BUDGET:-0.04}" $STOCK \
    --save "$W/$ex.json" --plot "$W/$ex.png" > "$W/$ex.txt" 2>&1
  stamp "bench $ex rc=$?"
  [ -f "$W/$ex.json" ] && python3 tools/bench_markdown.py "$W/$ex.json" > "$W/$ex.md" 2>&1
done

# 4. Optional Nsight Compute profiles of chosen rows: NCU_TARGETS="fused:256:8192:ours fused:256:8192:flashinfer ..."
#    (op:T:H:impl; the third matching launch is profiled, caches flushed, clocks left alone).
if [ -n "${NCU_TARGETS:-}" ]; then
  if command -v ncu >/dev/null 2>&1; then
    M=gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
    M=$M,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
    M=$M,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_warps,launch__grid_size
    M=$M,launch__block_size,launch__waves_per_multiprocessor,lts__t_sector_hit_rate.pct
    for tgt in $NCU_TARGETS; do
      IFS=: read -r op t h impl <<< "$tgt"
      stamp "ncu $tgt"
      timeout 60 ncu --clock-control none --launch-skip 2 --launch-count 1 --csv --metrics "$M" \
        -k "regex:silu|rmsnorm|fused|act_and_mul|RMSNorm|Norm" \
        python3 tools/device/bench_profile.py "$op" "$t" "$h" "$impl" > "$W/ncu_${op}_${t}x${h}_${impl}.csv" 2>&1
      echo "ncu $tgt rc=$?: $(grep -c '"' "$W/ncu_${op}_${t}x${h}_${impl}.csv") csv lines"
    done
  else
    echo "ncu not on PATH: no profiles"
  fi
fi

# Summary: per slot and shape, ours / best stock (< 1: ours faster), x floor, % copy; then the sweep's winners.
python3 - "$W" <<'PY' 2>&1 | tee "$W/summary.txt"
import json, os, sys
w = sys.argv[1]
for name in sorted(f for f in os.listdir(w) if f.endswith(".json")):
    r = json.load(open(os.path.join(w, name)))
    c = r["ceilings"]
    print(f"{name}: {r['status']} copy {c['copy_Bps'] / 1e12:.2f} TB/s floor {c['floor_graph_us']:.2f} us; "
          + "; ".join(f"{s['name']} skipped ({s['reason'][:80]})" for s in r["skipped"]))
    for row in r["rows"]:
        times = " ".join(f"{i['name'].split(':')[0]}={(i['graph'] or i['cold'])['median_us']:.2f}{'' if i['check'] == 'PASS' else '!'}"
                         for i in row["impls"] if i["cold"])
        rb = row["ratio_best"]
        print(f"  {'x'.join(map(str, row['dims'].values())):>10} ours/best {rb if rb is None else round(rb, 2)} "
              f"({row['best_stock']}) floor x{row['floor_multiple'] or 0:.2f} copy {100 * (row['frac_copy_bw'] or 0):.0f}% | {times}")
PY
[ -f "$W/sweep.txt" ] && cat "$W/sweep.txt"
tar czf "$D/bench_stock.tgz" -C "$W" .
cp "$W/summary.txt" "$D/summary.txt" 2>/dev/null
stamp "done: $(ls -la "$D" | tail -n +2 | wc -l) files in $D"
