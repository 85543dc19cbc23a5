#!/usr/bin/env bash
# Issue 32's GPU checks (tools/device/audit_check.py): the twin's flags, the audit's sampled commits, the handicap
# and the ladder kernels inside CUDA graphs, the audit's cost per llama-8b decode step, and the transformers worker's
# twin/counts/audit ops in graph mode. Needs `.whl` carried (pydantic). About 3 minutes on the H200.
# Run: bash tools/device/run_all.sh audit_check:400
set -u
cd "$(dirname "$0")/../.."
. tools/device/pyenv.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 tools/device/audit_check.py --out "${OUT:-/tmp/out}/audit_check"
