#!/usr/bin/env bash
# Issue 32's gate ladder on the H200: writes the rungs (tools/device/ladder/make.py) under /tmp/ladder and runs one
# `hotfloat qualify run` per rung through tools/device/qualify_sglang.sh (B, C, B' and the per-slot twin T), results
# under $OUT/qualify_sglang-<rung>/. LADDER_RUNGS picks rungs (default: the 1% silu with and without an extra fused op,
# 3% fused, the row rung and the honest-then-wrong rung); LADDER_AFTER the calls silu_after_n stays exact for.
# About 3 minutes per rung: bash tools/device/run_all.sh engine_install:60 ladder:1000
set -u
cd "$(dirname "$0")/../.."
. tools/device/pyenv.sh
python3 tools/device/ladder/make.py /tmp/ladder --after "${LADDER_AFTER:-20000}" > /dev/null || exit 1
for r in ${LADDER_RUNGS:-silu_rel_1 silu_1pct_with_fused fused_rel_3 silu_rows_1pct silu_after_n_sparse}; do
  QS_BUNDLE=/tmp/ladder/$r QS_TAG=$r QS_BOOT=${QS_BOOT:-200} QS_TIMEOUT=${LADDER_LIMIT:-225} bash tools/device/qualify_sglang.sh
done
