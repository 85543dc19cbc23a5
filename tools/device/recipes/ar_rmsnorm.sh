#!/usr/bin/env bash
# ar_rmsnorm: verify (two ranks) and bench of examples/ar_rmsnorm_triton, the collective.ar_residual_rmsnorm slot.
# Device run for issue 42's collective.ar_residual_rmsnorm (about 2 minutes on one GPU; the bench gets what the
# verify leaves of AREA_S): `hotfloat verify --world-size 2` of examples/ar_rmsnorm_triton, sandboxed, then
# `hotfloat bench` of it on the slot's bench shapes (1-512 tokens x
# hidden 4096 and 8192) beside the stock path (the all-reduce, then torch's unfused add + RMSNorm). NCCL refuses two
# ranks on one GPU, so with one GPU the two ranks verify on gloo (this host's CPU, Triton interpreted, bf16) and the
# bench runs on a one-rank NCCL group (the kernel's own work and the collective's launch, no traffic between GPUs);
# with 2+ GPUs the ranks verify on NCCL, bf16 and fp32, with CUDA-graph capture and replays. Writes $OUT/ar_rmsnorm/:
# verify.json, verify.txt, bench.txt, bench.json. AR_BUDGET (s per measurement, default 0.1) trades precision for
# time. The device image has no bubblewrap: run engine_install first in the same call (its payload's bwrap and
# pyseccomp sandbox both steps, and sgl_kernel's fused_add_rmsnorm joins the stock path), else both run UNSANDBOXED
# (said so) with pydantic from the carried `.whl`.
# Standalone: OUT=/tmp/o bash tools/device/recipes/ar_rmsnorm.sh; in one lease with others: tools/device/run.sh engine_install:90 ar_rmsnorm:120.
# Dry run on a CPU box (verify on gloo; the bench then fails, no GPU): PYTHON=.venv/bin/python OUT=/tmp/o bash tools/device/recipes/ar_rmsnorm.sh
set -x
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}
O="$OUT/ar_rmsnorm"
PY=${PYTHON:-python3}
mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
$PY -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)'
STOCK=(--stock sgl_kernel)  # not flashinfer: its norm JIT (47 s on the H200) would eat the bench's minute
[ -f "${HOTFLOAT_ENGINE_ROOT:-/tmp/hotfloat-engine}/.payload" ] && . tools/device/helpers/sglang_env.sh || { . tools/device/helpers/pyenv.sh; STOCK=(); }
EX=examples/ar_rmsnorm_triton
SANDBOX=""
if ! command -v bwrap >/dev/null 2>&1 || ! command -v prlimit >/dev/null 2>&1; then
  echo "NOTE: bwrap/prlimit missing on this machine: verify and bench run UNSANDBOXED (the CPU suite covers the sandbox)"
  SANDBOX=--unsandboxed
fi
BENCH='import sys; from hotfloat.cli.bench_cmd import bench; bench.main(sys.argv[1:], prog_name="hotfloat bench")'
VERIFY='import sys; from hotfloat.cli.verify_cmd import verify; verify.main(sys.argv[1:], prog_name="hotfloat verify")'

GPUS=$($PY -c 'import torch; print(torch.cuda.device_count())')
if [ "${GPUS:-0}" -ge 2 ]; then
  WHERE=(--device cuda --dtype bf16 --dtype fp32)
else
  echo "NOTE: $GPUS GPU: the two ranks verify on gloo (CPU); NCCL needs a GPU per rank"
  WHERE=(--device cpu --dtype bf16)
fi
timeout 50 $PY -c "$VERIFY" "$EX" --world-size 2 "${WHERE[@]}" --timeout 45 $SANDBOX --json \
  > "$O/verify.json" 2> "$O/verify.stderr"
echo "verify exit=$? (expected 0)" | tee "$O/verify.txt"
$PY - "$O/verify.json" <<'PY' 2>&1 | tee -a "$O/verify.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['status']} in {r['seconds']:.1f}s world={r['world_size']} backend={r['backend']} seed={r['seed']}")
print(r["reasons"][-1] if r["reasons"] else "")
for row in r["rows"]:
    err = "" if row["max_abs_err"] is None else f"{row['max_abs_err']:.3g}"
    print(f"{row['dtype']:5} {row['shape']:28} {row['status']:5} {err:9} {row['reason'][:100]}")
PY

timeout $(( ${AREA_S:-120} - SECONDS - 5 )) $PY -c "$BENCH" "$EX" --device cuda --shapes bench --budget "${AR_BUDGET:-0.1}" $SANDBOX "${STOCK[@]}" \
  --save "$O/bench.json" 2>&1 | tee "$O/bench.txt"
echo "bench exit=${PIPESTATUS[0]} (expected 0)"
ls -la "$O"
