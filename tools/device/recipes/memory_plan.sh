#!/usr/bin/env bash
# memory_plan: the GPU memory plan the qualification defaults get here, before any engine boots.
# The memory plan this GPU gets (issue 41), before any engine boots: the watchdog's hello and `memory` reply (device
# name, total, used, per-process holdings) and the plan for the qualification defaults (four engines with the twin,
# else three with the twin never beside C (hotfloat.qualify.protocol); and six stock engines for a calibration boot). A few seconds.
# Run: bash tools/device/run.sh engine_install:60 memory_plan:30 ...
set -u -o pipefail
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
python3 - <<'PY'
from hotfloat.errors import InfrastructureError
from hotfloat.qualify import QualifyOptions
from hotfloat.qualify.checkpoint import ensure
from hotfloat.qualify.isolation.client import Watchdog
from hotfloat.qualify.isolation.memory import GiB, need_bytes, plan
from hotfloat.engine.presets import PRESETS
from hotfloat.qualify.workload import kv_cap, make_workload

wd = Watchdog()
print("hello:", wd.ask("hello", wait_s=60))
dev = wd.ask("memory")
print(f"device {dev['name']}: total {dev['total'] / GiB:.1f} GiB, used {dev['used'] / GiB:.2f} GiB, procs {dev['procs']}")
e = QualifyOptions.for_device("cuda").engine()
w = make_workload("sglang", PRESETS[e.preset]["vocab_size"], seed=1)
need = need_bytes("sglang", e.preset, e.dtype, kv_cap(w), str(ensure(e.preset, e.dtype, e.weight_seed)))
print(f"need per {e.preset} engine: {need / GiB:.2f} GiB (KV cap {kv_cap(w)} tokens)")
for wanted, least in ((4, 3), (6, 6), (3, 3)):
    try:
        print(f"plan {wanted}/{least}:", plan(dev["name"], dev["total"], dev["used"], need, wanted=wanted, least=least))
    except InfrastructureError as err:
        print(f"plan {wanted}/{least}: refused: {err}")
wd.close()
PY
