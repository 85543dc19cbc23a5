#!/usr/bin/env bash
# bench_stock: verify, then bench, example bundles beside the stock kernels (BENCH_EXAMPLES).
# `hotfloat bench` of example bundles beside the stock kernels (sgl_kernel, FlashInfer, SGLang's triton
# attention), each example verified on cuda (sandboxed) first: a bench row of a kernel that computes the wrong answer
# says nothing. FlashInfer's norm and activation kernels JIT-build in the background meanwhile (the bench's first call
# waits on its file lock instead of building twice). Every file is written into $OUT/bench_stock/ as it is produced,
# so a run cut short keeps what finished; summary.txt gives, per slot and shape, ours / best stock (< 1: ours faster),
# x floor, % copy and every implementation's time. Needs the engine_install recipe earlier in the same call.
#   bash tools/device/run.sh engine_install:90 bench_stock:300
# Knobs: BENCH_EXAMPLES (default "silu_triton rmsnorm_triton fused_add_rmsnorm_triton"; e.g. "moe_triton
# moe_reduce_triton" or attention_decode_triton), BENCH_BUDGET (s per measurement, default 0.02), BENCH_STOCK_S (the
# limit, else the recipe's, else 100).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
D="$OUT/bench_stock"
mkdir -p "$D"
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
t0=$(date +%s)
LIMIT=${BENCH_STOCK_S:-${AREA_S:-100}}
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
stamp() { echo "[bench_stock +$(( $(date +%s) - t0 ))s] $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1 | tee "$D/gpu.txt"

# 1. Background builds of FlashInfer's norm and activation kernels (nvcc; the default examples' stock rows).
fi_build() {  # NAME PYTHON-STATEMENTS
  timeout 90 python3 tools/device/helpers/flashinfer_build.py "$1" "$2" > "$D/flashinfer_build_$1.txt" 2>&1
  echo "rc=$?" >> "$D/flashinfer_build_$1.txt"
}
if [ -z "${BENCH_EXAMPLES:-}" ]; then
  fi_build act "import flashinfer.activation as a; a.silu_and_mul(x)" &
  fi_build norm "import flashinfer.norm as n; a, b = x[:, :512].contiguous(), x[:, 512:].contiguous(); n.rmsnorm(a, w); n.fused_add_rmsnorm(a, b, w)" &
fi

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
[ -z "${BENCH_EXAMPLES:-}" ] && stamp "builds: $(grep -hE 'built|rc=|Error' "$D"/flashinfer_build_*.txt | tr '\n' ' ' | cut -c1-200)"

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
stamp "done"
