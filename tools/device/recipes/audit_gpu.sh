#!/usr/bin/env bash
# audit_gpu: the in-engine audit's taps on the GPU (issue 49): equal to the host taps, eager and in a CUDA graph, one compile per kernel, and their cost (decode step, prefill forward, audit off against on). Knob: AUDIT_QUICK=1 (8 layers).
# Needs the SGLang payload (engine_install first). About a minute.
set -u
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "${OUT:-/tmp/out}/audit_gpu"
OUT="${OUT:-/tmp/out}/audit_gpu" python3 tools/device/helpers/audit_gpu.py ${AUDIT_QUICK:+--quick}
