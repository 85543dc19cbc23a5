#!/usr/bin/env bash
# Issue 49's GPU checks of the in-engine audit (tools/device/audit_gpu.py): the Triton taps equal to the host taps,
# eager and replayed from a CUDA graph, one compiled variant per kernel, and the taps' cost per decode step and per
# prefill forward (audit off against on, same run). Needs the SGLang payload or `.whl` (pydantic). About a minute.
# Run: bash tools/device/run_all.sh engine_install:40 audit_gpu:240
set -u
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "${OUT:-/tmp/out}/audit_gpu"
OUT="${OUT:-/tmp/out}/audit_gpu" python3 tools/device/audit_gpu.py ${AUDIT_QUICK:+--quick}
