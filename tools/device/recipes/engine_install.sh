#!/usr/bin/env bash
# engine_install: unpack the carried SGLang payload and check that it imports; first in every call that needs SGLang.
# Unpacks the SGLang payload carried in .device-carry/engine/ (built here by `make device-engine`) to
# $HOTFLOAT_ENGINE_ROOT (default /tmp/hotfloat-engine) on the device, then sources sglang_env.sh and checks that the
# payload imports. Idempotent: the same payload already unpacked is kept (JIT caches under cache/ always are).
# Run first in a device call:  bash tools/device/run.sh engine_install:90 <areas...>
set -u -o pipefail
cd "$(dirname "$0")/../../.."
t0=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"; }
SRC=.device-carry/engine
ROOT=${HOTFLOAT_ENGINE_ROOT:-/tmp/hotfloat-engine}
fail() { echo "engine_install: FAIL: $*" >&2; exit 1; }

[ -f "$SRC/SHA256SUMS" ] || fail "no $SRC/SHA256SUMS: run 'make device-engine' here and carry .device-carry"
sig=$(sha256sum "$SRC/SHA256SUMS" | cut -c1-64)
if [ -f "$ROOT/.payload" ] && [ "$(cat "$ROOT/.payload")" = "$sig" ] && [ -d "$ROOT/site/sglang" ]; then
  echo "engine_install: $ROOT already holds payload ${sig:0:12} ($(elapsed))"
else
  (cd "$SRC" && sha256sum --quiet --strict -c SHA256SUMS) || fail "a payload chunk does not match SHA256SUMS"
  mkdir -p "$ROOT"
  rm -rf "$ROOT/.payload" "$ROOT/env.cache" "$ROOT/unpack"
  mkdir "$ROOT/unpack"
  chunks=$(awk '{print "'"$SRC"'/" $2}' "$SRC/SHA256SUMS")
  # shellcheck disable=SC2086  # chunk names carry no spaces (the builder names them engine.tar.xz.NN)
  if command -v xz >/dev/null; then
    cat $chunks | xz -dc -T0 | tar -x -C "$ROOT/unpack" || fail "unpacking failed"
  else
    cat $chunks | python3 -c 'import sys, tarfile
tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz").extractall(sys.argv[1], filter="tar")' "$ROOT/unpack" \
      || fail "unpacking failed (python tarfile)"
  fi
  for d in "$ROOT/unpack"/* "$ROOT/unpack"/.versions; do
    [ -e "$d" ] || continue
    rm -rf "$ROOT/$(basename "$d")"; mv "$d" "$ROOT/"
  done
  rmdir "$ROOT/unpack"
  echo "$sig" > "$ROOT/.payload"
  echo "engine_install: unpacked $(du -sh "$SRC" | cut -f1) of chunks to $ROOT ($(du -sh --exclude=cache "$ROOT" | cut -f1)) in $(elapsed)"
fi

. tools/device/helpers/sglang_env.sh || fail "sglang_env.sh failed"
"$HOTFLOAT_BWRAP" --version >/dev/null 2>&1 || fail "the carried bwrap does not run: $("$HOTFLOAT_BWRAP" --version 2>&1 | tail -1)"
missing=$(ldd "$ROOT/site/sgl_kernel/sm90/common_ops.abi3.so" 2>&1 | grep 'not found' | grep -v -E 'lib(torch|c10)' | awk '{print $1}' | tr '\n' ' ')
[ -z "$missing" ] || echo "engine_install: warning: common_ops.abi3.so has unresolved libraries: $missing" >&2
python3 - <<'PY' || fail "the payload does not import"
import importlib.metadata as m
import sglang, torch, hotfloat, hotfloat_sglang, pydantic  # noqa: F401
eps = [e.value for e in m.entry_points(group="sglang.srt.plugins") if e.name == "hotfloat"]
assert eps == ["hotfloat_sglang.plugin:activate"], f"hotfloat plugin entry point not found: {eps}"
print("engine_install: imports ok:", ", ".join(f"{d} {m.version(d)}" for d in
      ("sglang", "sglang-kernel", "flashinfer-python", "transformers", "tokenizers", "pydantic")),
      f"| torch {torch.__version__} cuda {torch.version.cuda} gpu {torch.cuda.is_available()}")
PY
echo "engine_install: OK in $(elapsed)"
