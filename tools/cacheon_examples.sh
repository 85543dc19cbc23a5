#!/usr/bin/env bash
# Cacheon's example bundles through `hotfloat bundle import` and `hotfloat verify` (CPU; collectives and the reduce
# slot on 2 gloo ranks), one line each: the held-out check of issue 42 ("import and verify to their intended verdict").
# Usage: tools/cacheon_examples.sh CACHEON_CHECKOUT [WORK_DIR]   (a clone of latent-to/cacheon; examples/ is read)
set -u
src=${1:?usage: tools/cacheon_examples.sh CACHEON_CHECKOUT [WORK_DIR]}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
hf=${HOTFLOAT:-$(dirname "$0")/../.venv/bin/hotfloat}
[ -d "$src/examples" ] || { echo "error: $src/examples: no such directory" >&2; exit 2; }
printf '%-40s %-8s %s\n' example import verify
for dir in "$src"/examples/*/; do
  name=$(basename "$dir")
  if ! "$hf" bundle import "$dir" --out "$work/$name" > "$work/$name.import.log" 2>&1; then
    printf '%-40s %-8s %s\n' "$name" refused "$(tail -n 1 "$work/$name.import.log" | cut -c1-110)"
    continue
  fi
  ranks=(); case $name in *reduce*) ranks=(--world-size 2) ;; esac
  "$hf" verify "$work/$name" --device cpu "${ranks[@]}" > "$work/$name.verify.txt" 2>&1
  printf '%-40s %-8s %s\n' "$name" ok "exit $? $(grep -Eo '^(PASS|FAIL|N/A) in [0-9.]+s' "$work/$name.verify.txt" | tail -n 1)"
done
echo "logs: $work"
