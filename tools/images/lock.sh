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
    python3 -m uv pip compile "$in" --generate-hashes --python-version 3.11 \
        --python-platform "${platform:-x86_64-manylinux_2_28}" --no-header --quiet -o "$out" "$@"
}
local_wheels=(--find-links /opt/wheels --index-strategy unsafe-best-match)
compile images/base/stack.in images/base/stack.lock -c "$pins" "${local_wheels[@]}"
grep -E '^[A-Za-z0-9]' images/base/stack.lock | sed 's/ *\\$//' > "$stack_pins"
for image in compiler worker validator; do
    compile "images/$image/requirements.in" "images/$image/requirements.lock" -c "$pins" -c "$stack_pins" "${local_wheels[@]}"
done
# The CUDA flavour runs qualification on SGLang, so it takes the engine lock's stack (torch 2.11.0 from PyPI, built
# for CUDA 13.0) first and the project lock only for what the engine does not pin; no CPU wheel folder. SGLang's
# wheels are manylinux_2_34 (the base, bookworm, has glibc 2.36). engine/requirements-nodeps.in (sglang & co.) is
# resolved --no-deps and appended, as `make engine` installs it: its full dependency set does not fit the engine lock.
engine_pins=$(mktemp); nodeps=$(mktemp); trap 'rm -f "$pins" "$stack_pins" "$engine_pins" "$nodeps"' EXIT
grep -hE '^[A-Za-z0-9]' engine/requirements.lock engine/requirements-nodeps.lock | sed 's/ *\\$//' > "$engine_pins"
awk -F'==' 'NR == FNR { engine[$1]; next } !($1 in engine)' "$engine_pins" "$pins" > "$stack_pins"
platform=x86_64-manylinux_2_34
compile images/worker/requirements-cuda.in images/worker/requirements-cuda.lock -c "$engine_pins" -c "$stack_pins"
compile engine/requirements-nodeps.in "$nodeps" --no-deps -c "$engine_pins"
{ echo "# installed without dependencies, as in the engine venv (engine/requirements-nodeps.in)"; cat "$nodeps"; } \
    >> images/worker/requirements-cuda.lock
