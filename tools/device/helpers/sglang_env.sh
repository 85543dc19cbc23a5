# Sourced by every device recipe that runs SGLang or this tree's code on the GPU host, after the engine_install
# recipe has unpacked the payload:   . tools/device/helpers/sglang_env.sh || exit 1
# Exports PYTHONPATH (this tree's packages + the payload), LD_LIBRARY_PATH (libnuma, the pip nvidia-* libraries),
# CUDA_HOME (a shim with lib64/ when the toolkit is pip-style), FLASHINFER_EXTRA_CUDAFLAGS/LDFLAGS (cuBLAS/cuRAND
# headers, libcuda for linking), JIT caches under $HOTFLOAT_ENGINE_ROOT/cache, HF offline variables, and the carried
# bubblewrap on PATH (HOTFLOAT_BWRAP). What depends on the machine is probed once into env.cache; sourcing again
# changes nothing and prints one line.

_hfe_root=${HOTFLOAT_ENGINE_ROOT:-/tmp/hotfloat-engine}
_hfe_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)

if [ ! -f "$_hfe_root/.payload" ] || [ ! -d "$_hfe_root/site/sglang" ]; then
  echo "sglang_env: no SGLang payload in $_hfe_root: run the engine_install recipe first (bash tools/device/run.sh engine_install:90 ...)" >&2
  return 1
fi

_hfe_prepend() {  # VAR DIR: put DIR first in the colon list VAR unless it is already there
  local cur=${!1:-}
  case ":$cur:" in *":$2:"*) ;; *) export "$1=$2${cur:+:$cur}" ;; esac
}
_hfe_append() {
  local cur=${!1:-}
  case ":$cur:" in *":$2:"*) ;; *) export "$1=${cur:+$cur:}$2" ;; esac
}

_hfe_cuda_toolkit() {  # a toolkit root with bin/nvcc, following a wrapper script if nvcc is one
  local c n
  for c in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13*; do
    [ -n "$c" ] && [ -x "$c/bin/nvcc" ] && [ "$c" != "$_hfe_root/cuda_home" ] && { echo "$c"; return; }
  done
  n=$(command -v nvcc 2>/dev/null) || n=""
  if [ -n "$n" ]; then
    if head -c2 "$n" | grep -q '#!'; then
      c=$(grep -oE '/[^ "]+/bin/nvcc' "$n" | head -1)
      [ -n "$c" ] && [ -x "$c" ] && n=$c
    fi
    dirname "$(dirname "$(readlink -f "$n")")"
    return
  fi
  python3 -c 'import glob, importlib.util, os
s = importlib.util.find_spec("nvidia")
hits = sorted(h for b in (s.submodule_search_locations if s else []) for h in glob.glob(os.path.join(b, "**", "bin", "nvcc"), recursive=True))
print(os.path.dirname(os.path.dirname(os.path.realpath(hits[0]))) if hits else "")'
}

_hfe_probe() {  # prints the machine-dependent assignments for env.cache
  local tk home nvlibs inc="$_hfe_root/extra_include" lib="$_hfe_root/extra_lib" e f d hub=""
  tk=$(_hfe_cuda_toolkit)
  home=$tk
  if [ -n "$tk" ] && [ ! -e "$tk/lib64/libcudart.so" ]; then  # pip-style toolkit: lib64/ with unversioned names
    home="$_hfe_root/cuda_home"
    rm -rf "$home"; mkdir -p "$home/lib64"
    for e in "$tk"/*; do [ "$(basename "$e")" = lib64 ] || ln -s "$e" "$home/$(basename "$e")"; done
    for d in "$tk/lib64" "$tk/lib" "$tk/targets/x86_64-linux/lib"; do
      [ -d "$d" ] || continue
      for f in "$d"/*; do [ -e "$home/lib64/$(basename "$f")" ] || ln -s "$f" "$home/lib64/"; done
    done
    for f in "$home"/lib64/lib*.so.*; do
      [ -e "$f" ] || continue
      e="${f%%.so.*}.so"; [ -e "$e" ] || ln -s "$(readlink -f "$f")" "$e"
    done
  fi
  nvlibs=$(python3 -c 'import glob, importlib.util, os
s = importlib.util.find_spec("nvidia")
print(":".join(sorted({os.path.dirname(p) for b in (s.submodule_search_locations if s else [])
    for p in glob.glob(os.path.join(b, "**", "lib*.so*"), recursive=True) if not p.endswith("/stubs/" + os.path.basename(p))})))')
  rm -rf "$inc" "$lib"; mkdir -p "$inc" "$lib"
  for d in $(python3 -c 'import glob, importlib.util, os
s = importlib.util.find_spec("nvidia")
print(" ".join(sorted({d for b in (s.submodule_search_locations if s else []) for d in glob.glob(os.path.join(b, "**", "include"), recursive=True)})))'); do
    for e in "$d"/*; do  # headers the toolkit lacks (cublasLt.h, curand_kernel.h) for flashinfer's JIT
      [ -e "$e" ] && [ ! -e "$home/include/$(basename "$e")" ] && [ ! -e "$inc/$(basename "$e")" ] && ln -s "$e" "$inc/"
    done
  done
  if [ ! -e "$home/lib64/stubs/libcuda.so" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so '; then
    e=$(ldconfig -p 2>/dev/null | grep -m1 'libcuda\.so\.1 ' | sed 's/.*=> //')
    [ -n "$e" ] && ln -s "$e" "$lib/libcuda.so"
  fi
  # transformers 5.8.1 needs huggingface-hub >=1.5,<2: the device's when it fits, else the carried one
  python3 -c 'import sys, huggingface_hub as h; from packaging.version import Version as V
sys.exit(0 if V("1.5") <= V(h.__version__) < V("2") else 1)' 2>/dev/null || hub="$_hfe_root/hub"
  printf '_hfe_cuda_home=%q\n_hfe_nvlibs=%q\n_hfe_hub=%q\n' "$home" "$nvlibs" "$hub"
}

if [ ! -f "$_hfe_root/env.cache" ]; then
  _hfe_probe > "$_hfe_root/env.cache.tmp" && mv "$_hfe_root/env.cache.tmp" "$_hfe_root/env.cache"
fi
. "$_hfe_root/env.cache"

[ -n "$_hfe_hub" ] && _hfe_prepend PYTHONPATH "$_hfe_hub"
_hfe_prepend PYTHONPATH "$_hfe_root/site"
_hfe_prepend PYTHONPATH "$_hfe_repo/services"
_hfe_prepend PYTHONPATH "$_hfe_repo/libs/hotfloat_sglang"
_hfe_prepend PYTHONPATH "$_hfe_repo/libs/hotfloat"
_hfe_prepend LD_LIBRARY_PATH "$_hfe_root/numa/usr/lib/x86_64-linux-gnu"
if [ -n "$_hfe_nvlibs" ]; then
  IFS=: read -r -a _hfe_dirs <<< "$_hfe_nvlibs"
  for _hfe_d in "${_hfe_dirs[@]}"; do _hfe_append LD_LIBRARY_PATH "$_hfe_d"; done
fi
if [ -n "$_hfe_cuda_home" ]; then
  export CUDA_HOME="$_hfe_cuda_home"
  _hfe_prepend PATH "$CUDA_HOME/bin"
  _hfe_append LD_LIBRARY_PATH "$CUDA_HOME/lib64"
fi
_hfe_prepend PATH "$_hfe_root/bwrap/usr/bin"
mkdir -p "$_hfe_root/cache"
export HOTFLOAT_ENGINE_ROOT="$_hfe_root" HOTFLOAT_BWRAP="$_hfe_root/bwrap/usr/bin/bwrap" \
  HOTFLOAT_ENGINE_PYTHON="$(command -v python3)" \
  FLASHINFER_EXTRA_CUDAFLAGS="-I$_hfe_root/extra_include" FLASHINFER_EXTRA_LDFLAGS="-L$_hfe_root/extra_lib" \
  TVM_FFI_CACHE_DIR="$_hfe_root/cache/tvm-ffi" FLASHINFER_WORKSPACE_BASE="$_hfe_root/cache" \
  TRITON_CACHE_DIR="$_hfe_root/cache/triton" \
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false
echo "sglang_env: payload $_hfe_root ($(cat "$_hfe_root/.versions" 2>/dev/null)), CUDA_HOME=${CUDA_HOME:-none}," \
  "hub=${_hfe_hub:-the device one}, bwrap=$HOTFLOAT_BWRAP" >&2
unset _hfe_d _hfe_dirs
