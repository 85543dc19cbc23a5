#!/usr/bin/env bash
# Re-resolves every image's Python lock (needs PyPI); `make images-lock` runs it, then rewrites the Debian lock.
# Versions follow the project lock (requirements.lock) so the images run what CI tests; the stack lock comes first
# and constrains the per-image locks, so every cpu image shares one identical stack layer.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q uv
pins=$(mktemp); stack_pins=$(mktemp); trap 'rm -f "$pins" "$stack_pins"' EXIT
grep -E '^[A-Za-z0-9]' requirements.lock | sed 's/ *\\$//' > "$pins"
compile() {  # compile IN OUT [extra uv args...]
    local in=$1 out=$2; shift 2
    python3 -m uv pip compile "$in" --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
        --no-header --quiet -o "$out" "$@"
}
local_wheels=(--find-links /opt/wheels --index-strategy unsafe-best-match)
compile images/base/stack.in images/base/stack.lock -c "$pins" "${local_wheels[@]}"
grep -E '^[A-Za-z0-9]' images/base/stack.lock | sed 's/ *\\$//' > "$stack_pins"
for image in compiler worker validator; do
    compile "images/$image/requirements.in" "images/$image/requirements.lock" -c "$pins" -c "$stack_pins" "${local_wheels[@]}"
done
# The CUDA flavour takes PyPI's CUDA build of torch, so neither the CPU wheel folder nor the CPU torch pin applies.
grep -v '^torch==' "$pins" > "$stack_pins"
compile images/worker/requirements-cuda.in images/worker/requirements-cuda.lock -c "$stack_pins"
