#!/usr/bin/env bash
# Issue 25 item 4: the resident-engine qualification (tools/device/qualify_sglang.sh, helper B's) with
# examples/attention_decode_triton armed instead of the silu example. The engines run SGLang's triton attention
# backend, and the hotfloat_sglang plugin hooks TritonAttnBackend's decode call only for a bundle that offers
# attention.decode, so C's decode attention runs the example while B and B' run SGLang's kernel. Writes
# $OUT/attention_qualify/qualify_sglang/ (same files as qualify_sglang). Needs engine_install in the same call:
#   tools/device/run_all.sh engine_install:90 attention_qualify:240
set -u
OUT="${OUT:-/tmp/out}/attention_qualify" QS_BUNDLE=examples/attention_decode_triton \
  exec bash "$(dirname "$0")/qualify_sglang.sh"
