#!/usr/bin/env bash
# qualify_each: the qualify_sglang recipe once per bundle in QS_BUNDLES.
# One resident-engine qualification (the qualify_sglang recipe) per bundle in QS_BUNDLES, each under
# $OUT/qualify_sglang-<bundle name>/; every QS_* knob applies to each (QS_TIMEOUT per qualification, default 225;
# QS_BOOT default 200). Default: the two examples that are not bit-exact, whose gate leans on the twin
# (fused_add_rmsnorm_triton, attention_decode_triton). Hostile bundles for the GPU are in tools/device/adversaries/:
#   QS_BUNDLES="tools/device/adversaries/memory_hoard_late tools/device/adversaries/gpu_share_spinner" \
#     bash tools/device/run.sh engine_install:60 qualify_each:470
set -u
cd "$(dirname "$0")/../../.."
for b in ${QS_BUNDLES:-examples/fused_add_rmsnorm_triton examples/attention_decode_triton}; do
  QS_BUNDLE=$b QS_TAG=$(basename "$b") QS_BOOT=${QS_BOOT:-200} QS_TIMEOUT=${QS_TIMEOUT:-225} \
    bash tools/device/recipes/qualify_sglang.sh
done
