#!/usr/bin/env bash
# env: `hotfloat env` and `hotfloat preflight` on the GPU host.
# Device run for issue 14: `hotfloat env --json` and `hotfloat preflight --json` on the GPU host, with the host's own
# python3 (torch+CUDA, triton; no project venv). Results land in $OUT/env/. Each step continues past a failure.
set -x
OUT=${OUT:-out/device}
mkdir -p "$OUT/env"
. tools/device/helpers/pyenv.sh
export PYTHONDONTWRITEBYTECODE=1
{
    date -u; uname -a; nvidia-smi || true; command -v bwrap prlimit nvcc || true
    python3 -c 'import sys, torch, triton; print(sys.version); print("torch", torch.__version__, torch.version.cuda, torch.cuda.is_available()); print("triton", triton.__version__)' || true
    for m in click pydantic rich packaging cuda.bindings; do python3 -c "import $m; print('$m ok')" || echo "$m MISSING"; done
} > "$OUT/env/host.txt" 2>&1
cat "$OUT/env/host.txt"
# The CLI imports every command; if that fails here, fall back to the library calls the commands wrap.
timeout 60 python3 -m hotfloat.cli env --json > "$OUT/env/env.json" 2> "$OUT/env/env.stderr" \
    || timeout 60 python3 -c 'from hotfloat.env import collect; print(collect().model_dump_json(indent=2))' \
        > "$OUT/env/env.json" 2>> "$OUT/env/env.stderr"
echo "env exit: $?"
timeout 60 python3 -m hotfloat.cli env >> "$OUT/env/env.table.txt" 2>&1 || true
timeout 150 python3 -m hotfloat.cli preflight --json > "$OUT/env/preflight.json" 2> "$OUT/env/preflight.stderr"
echo "preflight exit: $?" | tee "$OUT/env/preflight.exit"
if [ ! -s "$OUT/env/preflight.json" ]; then
    timeout 150 python3 -c 'from hotfloat.env.preflight import preflight; print(preflight().model_dump_json(indent=2))' \
        > "$OUT/env/preflight.json" 2>> "$OUT/env/preflight.stderr" || true
fi
cat "$OUT/env/env.json" "$OUT/env/preflight.json"
tail -n 20 "$OUT/env/env.stderr" "$OUT/env/preflight.stderr"
exit 0
