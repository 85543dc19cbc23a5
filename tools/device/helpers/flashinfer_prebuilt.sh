# Sourced after sglang_env.sh by device recipes that run FlashInfer attention:
#   . tools/device/helpers/flashinfer_prebuilt.sh || exit 1
# Unpacks the sm_90a modules built on the CPU box by `make device-flashinfer` (.device-carry/flashinfer/) into the
# payload FlashInfer's data/aot/, the directory JitSpec.build_and_load looks in before it runs ninja, so plan() loads
# them instead of compiling (150 s and more per prefill module). Returns 0 and leaves FlashInfer to JIT when nothing
# is carried or the GPU is not sm_90; returns 1 when a chunk is corrupt or the modules were built for another
# FlashInfer. Exports HOTFLOAT_FLASHINFER_AOT (the directory). Sourcing again changes nothing and prints one line.

_hfp_unpack() {  # SRC: messages on stderr; non-zero only when the carry is there but cannot be used
  local src=$1 cap aot sig want found
  if [ ! -f "$src/SHA256SUMS" ]; then
    echo "flashinfer_prebuilt: nothing carried in $src: FlashInfer will JIT" >&2
    return 0
  fi
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
  if [ "$cap" != "9.0" ] && [ -z "${HOTFLOAT_FLASHINFER_ANY_GPU:-}" ]; then  # the override is for CPU-box checks
    echo "flashinfer_prebuilt: GPU compute capability '${cap:-none}' is not 9.0 (modules are sm_90a): FlashInfer will JIT" >&2
    return 0
  fi
  # the directory FlashInfer's env.py computes, found without importing it (an import pulls in torch)
  found=$(python3 -c 'import importlib.metadata as m, importlib.util as u, os, sys
if u.find_spec("flashinfer_jit_cache"):
    sys.exit("flashinfer_jit_cache is installed: FlashInfer looks for AOT modules there, not in data/aot")
s = u.find_spec("flashinfer")
if s is None:
    sys.exit("flashinfer is not importable: source sglang_env.sh first")
env = os.path.realpath(os.path.join(s.submodule_search_locations[0], "jit", "env.py"))  # as env.py resolves itself
print(os.path.join(os.path.dirname(os.path.dirname(env)), "data", "aot"), m.version("flashinfer-python"))') \
    || { echo "flashinfer_prebuilt: FAIL: cannot place the modules" >&2; return 1; }
  aot=${found% *}
  want=$(awk 'NR == 1 { sub(",", "", $2); print $2 }' "$src/MANIFEST.txt")
  if [ "$want" != "${found##* }" ]; then
    echo "flashinfer_prebuilt: FAIL: modules built for flashinfer $want, the payload has ${found##* }" >&2
    return 1
  fi
  sig=$(sha256sum "$src/SHA256SUMS" | cut -c1-64)
  export HOTFLOAT_FLASHINFER_AOT=$aot
  if [ -f "$aot/.carried" ] && [ "$(cat "$aot/.carried")" = "$sig" ]; then
    echo "flashinfer_prebuilt: $aot already holds ${sig:0:12}" >&2
    return 0
  fi
  (cd "$src" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1) \
    || { echo "flashinfer_prebuilt: FAIL: a chunk does not match SHA256SUMS" >&2; return 1; }
  rm -rf "$aot"
  mkdir -p "$(dirname "$aot")"
  # shellcheck disable=SC2046  # chunk names carry no spaces (flashinfer-aot.tar.xz.NN)
  if command -v xz >/dev/null; then
    cat $(awk -v d="$src" '{ print d "/" $2 }' "$src/SHA256SUMS") | xz -dc | tar -x -C "$(dirname "$aot")"
  else
    cat $(awk -v d="$src" '{ print d "/" $2 }' "$src/SHA256SUMS") | python3 -c 'import sys, tarfile
tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz").extractall(sys.argv[1], filter="tar")' "$(dirname "$aot")"
  fi || { echo "flashinfer_prebuilt: FAIL: unpacking failed" >&2; return 1; }
  echo "$sig" > "$aot/.carried"
  echo "flashinfer_prebuilt: $(find "$aot" -name '*.so' | wc -l) modules ($(du -sh "$aot" | cut -f1)) in $aot" >&2
}

_hfp_unpack "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/.device-carry/flashinfer"
