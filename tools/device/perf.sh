#!/usr/bin/env bash
# Device run for issues 10 and 13 (hotfloat bench on the H200): the tuning sweep, then `hotfloat bench` of both
# example bundles on the bench and decode shapes, beside the stock kernels, with JSON, tables and plots under
# $OUT/perf/. Needs `.whl` carried (pydantic and its deps for the device's Python 3.12; see docs/benchmarks.md).
set -x
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/perf"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)'
. tools/device/pyenv.sh
BENCH='import sys; from hotfloat.cli.bench_cmd import bench; bench.main(sys.argv[1:], prog_name="hotfloat bench")'
if [ "${PERF_SWEEP:-1}" = 1 ]; then
  timeout 150 python3 tools/device/perf_sweep.py "$OUT/perf/sweep.json" 2>&1 | tee "$OUT/perf/sweep.txt"
fi
for ex in silu_triton rmsnorm_triton; do
  timeout 120 python3 -c "$BENCH" "examples/$ex" --device cuda --shapes all ${PERF_BUDGET:+--budget $PERF_BUDGET} \
    --save "$OUT/perf/$ex.json" --plot "$OUT/perf/$ex.png" 2>&1 | tee "$OUT/perf/$ex.txt"
done
ls -la "$OUT/perf"
