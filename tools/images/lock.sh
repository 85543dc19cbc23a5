#!/usr/bin/env bash
# Re-resolves every image's Python lock (needs PyPI); `make images-lock` runs it, then rewrites the Debian lock.
# Versions follow the project lock (requirements.lock) so the images run what CI tests; the stack lock comes first
# and constrains the per-image locks, so every cpu image shares one identical stack layer.
# Usage: tools/images/lock.sh [all|cpu|cuda]   (`make engine-lock` re-locks the cuda worker with the engine: cuda)
set -euo pipefail
what=${1:-all}
case $what in all|cpu|cuda) ;; *) echo "usage: $0 [all|cpu|cuda]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/../.."
python3 -m pip install -q uv
pins=$(mktemp); stack_pins=$(mktemp); trap 'rm -f "$pins" "$stack_pins"' EXIT
grep -E '^[A-Za-z0-9]' requirements.lock | sed 's/ *\\$//' > "$pins"
compile() {  # compile IN OUT [extra uv args...]
    local in=$1 out=$2; shift 2
    python3 -m uv pip compile "$in" --generate-hashes --python-version 3.11 \
        --python-platform "${platform:-x86_64-manylinux_2_28}" --no-header --quiet -o "$out" "$@"
    # name the constraint files by what they hold, not by their temporary paths, so a re-lock only shows real changes
    sed -i -e "s|-c $pins\$|-c requirements.lock|" -e "s|-c $stack_pins\$|-c images/base/stack.lock|" \
        -e "s|-c ${rest_pins:-/nonexistent}\$|-c requirements.lock (what the engine does not pin)|" \
        -e "s|-c ${engine_pins:-/nonexistent}\$|-c engine/requirements*.lock|" "$out"
}
local_wheels=(--find-links /opt/wheels --index-strategy unsafe-best-match)
if [ "$what" != cuda ]; then
    compile images/base/stack.in images/base/stack.lock -c "$pins" "${local_wheels[@]}"
    grep -E '^[A-Za-z0-9]' images/base/stack.lock | sed 's/ *\\$//' > "$stack_pins"
    for image in compiler worker validator; do
        compile "images/$image/requirements.in" "images/$image/requirements.lock" -c "$pins" -c "$stack_pins" "${local_wheels[@]}"
    done
fi
[ "$what" = cpu ] && exit 0
# The CUDA flavour runs qualification on SGLang, so it takes the engine lock's stack (torch 2.11.0 from PyPI, built
# for CUDA 13.0) first and the project lock only for what the engine does not pin; no CPU wheel folder. SGLang's
# wheels are manylinux_2_34 (the base, bookworm, has glibc 2.36). engine/requirements-nodeps.in (sglang & co.) is
# resolved --no-deps and appended, as `make engine` installs it: its full dependency set does not fit the engine lock.
engine_pins=$(mktemp); rest_pins=$(mktemp); nodeps=$(mktemp)
trap 'rm -f "$pins" "$stack_pins" "$engine_pins" "$rest_pins" "$nodeps"' EXIT
grep -hE '^[A-Za-z0-9]' engine/requirements.lock engine/requirements-nodeps.lock | sed 's/ *\\$//' > "$engine_pins"
awk -F'==' 'NR == FNR { engine[$1]; next } !($1 in engine)' "$engine_pins" "$pins" > "$rest_pins"
platform=x86_64-manylinux_2_34
compile images/worker/requirements-cuda.in images/worker/requirements-cuda.lock -c "$engine_pins" -c "$rest_pins"
compile engine/requirements-nodeps.in "$nodeps" --no-deps -c "$engine_pins"
{ echo "# installed without dependencies, as in the engine venv (engine/requirements-nodeps.in)"; cat "$nodeps"; } \
    >> images/worker/requirements-cuda.lock
