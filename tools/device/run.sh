#!/usr/bin/env bash
# The one entry point for a device call: runs named recipes (tools/device/recipes/<name>.sh), each under its own time
# limit, and packs every result into $OUT/results.tgz (the device returns at most 8 files), summary.txt beside it.
#   bash tools/device/run.sh RECIPE:SECONDS ...     e.g. engine_install:90 qualify_sglang:300
#   bash tools/device/run.sh list                   every recipe, one line each
# Knobs are environment variables, named in each recipe's header (QS_BUNDLE=... for qualify_sglang); a recipe sees its
# limit as AREA_S and writes under $OUT/<its name>/. The archive is rewritten after every recipe, so a call cut short
# keeps what finished. Helpers the recipes share (the SGLang environment, the profilers) are in tools/device/helpers/.
set -u
cd "$(dirname "$0")/../.."
recipes=tools/device/recipes
if [ $# -eq 0 ] || [ "$1" = list ]; then
  [ $# -eq 0 ] && echo "usage: bash tools/device/run.sh RECIPE:SECONDS ...   (OUT must be set; recipes:)" >&2
  for f in "$recipes"/*.sh; do sed -n 2p "$f" | cut -c3-; done
  [ $# -eq 0 ] && exit 2 || exit 0
fi
for spec in "$@"; do  # every name checked before anything runs: a typo must not cost a lease
  [[ $spec =~ ^[a-z_]+:[0-9]+$ ]] || { echo "run.sh: '$spec' is not RECIPE:SECONDS" >&2; exit 2; }
  [ -f "$recipes/${spec%%:*}.sh" ] || { echo "run.sh: no recipe '${spec%%:*}' (bash tools/device/run.sh list)" >&2; exit 2; }
done
real_out=${OUT:?OUT must be set by the device tool}
stage=$(mktemp -d)
export PYTHONUNBUFFERED=1
for spec in "$@"; do
  name=${spec%%:*}; limit=${spec##*:}
  mkdir -p "$stage/$name"
  echo "=== $name (limit ${limit}s) ==="
  start=$(date +%s)
  OUT=$stage AREA_S=$limit timeout -k 5 "$limit" bash "$recipes/$name.sh" >"$stage/$name/run.log" 2>&1
  rc=$?
  echo "$name rc=$rc in $(( $(date +%s) - start ))s" | tee -a "$stage/summary.txt"
  tail -n 25 "$stage/$name/run.log"
  tar czf "$real_out/results.tgz" -C "$stage" .
  cp "$stage/summary.txt" "$real_out/summary.txt"
done
