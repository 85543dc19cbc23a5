#!/usr/bin/env bash
# The twin-referenced correctness gate on the H200: one `hotfloat qualify run` per bundle in TG_BUNDLES (default the
# two examples that are not bit-exact: fused_add_rmsnorm_triton and attention_decode_triton), each with B, C, B' and
# the twin T, through tools/device/qualify_sglang.sh, results under $OUT/qualify_sglang-<bundle name>/.
# Run: bash tools/device/run_all.sh engine_install:60 twin_gate:470   (TG_LIMIT per qualification, default 225 s)
set -u
cd "$(dirname "$0")/../.."
for b in ${TG_BUNDLES:-examples/fused_add_rmsnorm_triton examples/attention_decode_triton}; do
  QS_BUNDLE=$b QS_TAG=$(basename "$b") QS_BOOT=${QS_BOOT:-200} QS_TIMEOUT=${TG_LIMIT:-225} bash tools/device/qualify_sglang.sh
done
