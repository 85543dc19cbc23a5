#!/usr/bin/env bash
# native: cubins built here (`make device-carry-native`) gated, loaded and verified on the GPU.
# Live test of the native toolchain (issue 6) on a CUDA machine: cubins built deviceless HERE by `make device-carry-native`
# (carried as .device-carry/native/) are gated, loaded through the Driver API, checked against their declaration,
# launched and verified on the GPU by the same worker `hotfloat admit` uses. Armed by HOTFLOAT_LIVE_NATIVE=1; once
# armed, a missing prerequisite is a loud failure. Results: $OUT/native/. Needs python3 with torch+CUDA and cuda-bindings.
set -x
: "${OUT:=/tmp/hotfloat-out}"
mkdir -p "$OUT/native"
exec > >(tee "$OUT/native/log.txt") 2>&1
if [ "${HOTFLOAT_LIVE_NATIVE:-}" != 1 ]; then echo "native.sh: not armed (set HOTFLOAT_LIVE_NATIVE=1)"; exit 2; fi
fail=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || fail=1
python3 - <<'PY' || fail=1
import sys, torch
from cuda.bindings import driver
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print("cuInit", driver.cuInit(0), "device", torch.cuda.get_device_name())
PY
for ex in silu_triton_aot silu_cute_aot; do
  dir=".device-carry/native/$ex"
  [ -f "$dir/index.json" ] || { echo "MISSING $dir/index.json: run make device-carry-native and carry .device-carry"; fail=1; continue; }
  PYTHONPATH=libs/hotfloat timeout 150 python3 - "$dir" "$OUT/native/$ex.json" <<'PY' || fail=1
import copy, json, os, subprocess, sys, threading
from hotfloat.native import elf, params

build_dir, result_file = sys.argv[1], sys.argv[2]
index = json.load(open(os.path.join(build_dir, "index.json")))
assert index["status"] == "PASS" and index["kernels"], index
arts = []
for k in index["kernels"]:
    data = open(os.path.join(build_dir, k["cubin"]), "rb").read()
    cub = elf.gate(data)
    assert list(cub.kernels) == [k["symbol"]], (cub.kernels, k["symbol"])
    assert [list(p) for p in cub.kernels[k["symbol"]]] == [list(p) for p in params.layout(k["param_types"], k["kind"])]
    arts.append({**k, "slot": k["op"].split(":")[0], "path": os.path.abspath(os.path.join(build_dir, k["cubin"]))})
# One tampered declaration: the driver's reported layout must refuse it.
bad = copy.deepcopy(arts[0]); bad["cubin"] = "tampered-" + bad["cubin"]; bad["layout"] = bad["layout"][:-1]
wrong = copy.deepcopy(arts[0]); wrong["cubin"] = "wrong-name-" + wrong["cubin"]; wrong["symbol"] = "not_the_kernel"

def run(artifacts):  # the worker's channel (hotfloat.sandbox.channel), unsandboxed here; admit() below sandboxes it
    r, w = os.pipe()
    p = subprocess.Popen([sys.executable, "libs/hotfloat/hotfloat/native/worker.py"], stdin=subprocess.PIPE,
                         pass_fds=(w,), env={**os.environ, "PYTHONPATH": "libs/hotfloat", "HOTFLOAT_RESULT_FD": str(w)})
    os.close(w)
    got = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(r, "rb").read()))
    reader.start()
    p.communicate(json.dumps({"artifacts": artifacts, "seed": 20261202}).encode(), timeout=120)
    reader.join(10)
    assert p.returncode == 0 and got and got[0].startswith(b"ready\n"), f"worker exit {p.returncode}"
    return json.loads(got[0][len(b"ready\n"):])

report = run(arts + [bad, wrong])
json.dump(report, open(result_file, "w"), indent=1)
for r in report["results"]:
    print(("ok  " if r["ok"] else "FAIL"), r["cubin"], "loaded", r["loaded"], r["reason"])
    for row in r["rows"]:
        print("     ", row["shape"], "max_abs_err", row["max_abs_err"], row["problems"])
good = [r for r in report["results"] if not r["cubin"].startswith(("tampered-", "wrong-name-"))]
negs = [r for r in report["results"] if r["cubin"].startswith(("tampered-", "wrong-name-"))]
assert len(good) == len(index["kernels"]) and all(r["ok"] for r in good), "a declared cubin failed admission"
assert all(len(r["rows"]) >= 5 for r in good), "too few shapes verified"
assert len(negs) == 2 and not any(r["ok"] for r in negs), "a tampered declaration was admitted"
print("LIVE NATIVE OK", build_dir, "on", report["device"], f"{report['elapsed_s']:.2f}s")
PY
done
# admit() runs the worker sandboxed: bwrap and the libseccomp binding come from the engine payload when it is there
[ -f "${HOTFLOAT_ENGINE_ROOT:-/tmp/hotfloat-engine}/.payload" ] && . tools/device/helpers/sglang_env.sh
if python3 -c "import pydantic, tomllib" 2>/dev/null; then
  for ex in silu_triton_aot silu_cute_aot; do
    PYTHONPATH=libs/hotfloat${PYTHONPATH:+:$PYTHONPATH} timeout 150 python3 - "$ex" <<'PY' || fail=1
import json, pathlib, sys
from hotfloat.compiler import load_build
from hotfloat.bundle import load_bundle
from hotfloat.admission.admit import admit
d = pathlib.Path(".device-carry/native") / sys.argv[1]
ev = (d / "index.json").read_text()
rec = load_build(ev, {k["cubin"]: (d / k["cubin"]).read_bytes() for k in json.loads(ev)["kernels"]})
rep = admit(load_bundle("examples/" + sys.argv[1]), rec, seed=7)
print("FULL admit()", sys.argv[1], rep.status.value, rep.device, rep.reasons)
assert rep.status.value == "PASS"
PY
  done
else
  echo "pydantic/tomllib missing on this python: full admit() path not run (the worker path above is what it calls)"
fi
echo "native.sh: fail=$fail"
exit $fail
