#!/usr/bin/env bash
# slot_share: the share of a prefill and a decode step each slot holds, per qualification model.
# The share of an engine step each slot holds (issue 42 item 5): tools/device/helpers/slot_share.py boots SGLang's ModelRunner
# on each qualification model in turn (llama-8b, mixtral-8b; generated once into $HOTFLOAT_MODEL_CACHE), hooks every
# seam on a null-armed router and profiles 8 prefill and 8 decode steps of the `sglang` workload, attributing each
# kernel's GPU time to the slot whose stock call launched it. Needs the SGLang payload:
#   bash tools/device/run.sh engine_install:60 slot_share:520
# Budget ~3-4 min a model on one H200 (its checkpoint generated, one boot). Knobs: SHARE_PRESETS ("llama-8b mixtral-8b"),
# SHARE_STEPS (8). Writes $OUT/slot_share/share-<gpu>-<preset>.json, one record per preset (commit each under
# libs/hotfloat/hotfloat/slots/; `hotfloat slots --share` prints every committed one) and table.txt.
set -u -o pipefail
cd "$(dirname "$0")/../../.."
. tools/device/helpers/sglang_env.sh || exit 1
DEST="${OUT:-/tmp/out}/slot_share"
mkdir -p "$DEST"
export HOTFLOAT_MODEL_CACHE=${HOTFLOAT_MODEL_CACHE:-/tmp/hotfloat-models} PYTHONUNBUFFERED=1
gpu=$(python3 -c 'import re, torch; n = torch.cuda.get_device_name(0); m = re.search(r"[A-Z]\d{3}", n)
print((m.group(0) if m else n.replace(" ", "-")).lower())')  # h200, h100
nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used,memory.total --format=csv > "$DEST/gpu.txt" 2>&1
# One record per preset (share-<gpu>-<preset>.json; every committed one loads), so a call cut during the second
# preset keeps the first.
rc=0
for preset in ${SHARE_PRESETS:-llama-8b mixtral-8b}; do
  record="$DEST/share-$gpu-$preset.json"
  start=$(date +%s)
  python3 tools/device/helpers/slot_share.py --out "$record" --preset "$preset" --steps "${SHARE_STEPS:-8}" \
    --command "SHARE_PRESETS=$preset bash tools/device/run.sh engine_install:40 slot_share:${AREA_S:-250}" \
    2>&1 | tee "$DEST/run-$preset.log"
  got=${PIPESTATUS[0]}
  [ "$got" = 0 ] || rc=$got
  echo "slot_share $preset: rc=$got in $(( $(date +%s) - start )) s"
  [ -s "$record" ] || continue
  python3 - "$record" <<'PY' 2>&1 | tee -a "$DEST/table.txt"
import sys
from pathlib import Path
from hotfloat.slots.share import ShareRecord, rows
r = ShareRecord.model_validate_json(Path(sys.argv[1]).read_text())
print(f"{r.gpu}: {r.method}")
for m in r.models:
    for kind in ("decode", "prefill"):
        s = getattr(m, kind)
        print(f"{m.preset} {kind}: {s.tokens} tokens, {s.step_us / 1e3:.2f} ms GPU per step, unattributed {s.unattributed_us:.1f} us")
        for slot, us, frac, calls in rows(s):
            print(f"  {slot:34} {'-' if us is None else f'{us:10.1f}'} us  {'-' if frac is None else f'{100 * frac:5.1f}'} %  {calls:g} calls")
PY
done
exit "$rc"
