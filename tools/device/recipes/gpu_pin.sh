#!/usr/bin/env bash
# gpu_pin: `serve --gpu N` pins CUDA, the sandbox's device nodes and hostload to GPU N.
# Device check for `hotfloat serve ... --gpu N` (issue 36; about 30 s a GPU, limit 120 on one GPU): per index, CUDA
# inside a GPU sandbox sees one device, the one NVML numbers N (same PCI bus), and only its /dev/nvidiaM; hostload
# reads its SM clock; --gpu past the last GPU is one error line, exit 2. On a one-GPU machine only index 0 and the
# refusal are exercised; the minor-number mapping needs a host of several GPUs.
# Run: bash tools/device/run.sh engine_install:60 gpu_pin:120 ; results in $OUT/gpu_pin/.
set -u
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-$PWD/libs/hotfloat}"
O="${OUT:?OUT must be set}/gpu_pin"
mkdir -p "$O"
nvidia-smi -L
${PYTHON:-python3} tools/device/helpers/gpu_pin.py "$O"
