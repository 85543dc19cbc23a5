#!/usr/bin/env bash
# Issue 32 through SGLang (tools/device/audit_sglang.py): one audited twin engine answers counts, twin and audit
# through the plugin's control file in the scheduler process. About 2.5 minutes (boot 113 s on the H200).
# Run: bash tools/device/run_all.sh engine_install:60 audit_sglang:300
set -u
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 tools/device/audit_sglang.py
