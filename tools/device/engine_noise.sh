#!/usr/bin/env bash
# Issue 18 diagnostics: where a pass's time and noise come from (tools/device/engine_noise.py): one SGLang engine per
# model preset, batch sizes x request modes (logprobs or not), pass wall time, engine CPU, GPU utilisation.
# Run: bash tools/device/run_all.sh engine_install:60 engine_noise:300   (NOISE_PRESETS, NOISE_ROUNDS, NOISE_BUDGET)
set -u
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
export HOTFLOAT_MODEL_CACHE=/tmp/hotfloat-models PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 tools/device/engine_noise.py --presets "${NOISE_PRESETS:-qwen2-0.5b,llama-8b}" --rounds "${NOISE_ROUNDS:-6}" \
  --budget "${NOISE_BUDGET:-280}" 2>&1 | grep -v "it/s\]\|Capturing batches\|Loading safetensors"
