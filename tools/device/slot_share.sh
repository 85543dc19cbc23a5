#!/usr/bin/env bash
# The share of an engine step each slot holds (issue 42 item 5): tools/device/slot_share.py boots SGLang's ModelRunner
# on each qualification model in turn (llama-8b, mixtral-8b; generated once into $HOTFLOAT_MODEL_CACHE), hooks every
# seam on a null-armed router and profiles 8 prefill and 8 decode steps of the `sglang` workload, attributing each
# kernel's GPU time to the slot whose stock call launched it. Needs the SGLang payload:
#   SHARE_PRESETS=llama-8b bash tools/device/run_all.sh engine_install:90 slot_share:500   (then mixtral-8b)
# Budget ~3-4 min a model on one H200 (its checkpoint generated, one boot). Knobs: SHARE_PRESETS ("llama-8b mixtral-8b"),
# SHARE_STEPS (8); one preset per call (SHARE_PRESETS=llama-8b, then mixtral-8b) when ten minutes are too few.
# Writes $OUT/slot_share/share-<gpu>[-<presets>].json (commit each as libs/hotfloat/hotfloat/slots/ under the same
# name with a docs/slot-share-<gpu>.json link; `hotfloat slots --share` prints every committed one) and table.txt.
set -u -o pipefail
cd "$(dirname "$0")/../.."
. tools/device/sglang_env.sh || exit 1
DEST="${OUT:-/tmp/out}/slot_share"
mkdir -p "$DEST"
export HOTFLOAT_MODEL_CACHE=${HOTFLOAT_MODEL_CACHE:-/tmp/hotfloat-models} PYTHONUNBUFFERED=1
gpu=$(python3 -c 'import re, torch; n = torch.cuda.get_device_name(0); m = re.search(r"[A-Z]\d{3}", n)
print((m.group(0) if m else n.replace(" ", "-")).lower())')  # h200, h100
suffix=${SHARE_PRESETS:+-$(echo "$SHARE_PRESETS" | tr ' ' '-')}  # split runs write records side by side; all load
record="$DEST/share-$gpu$suffix.json"
presets=()
for p in ${SHARE_PRESETS:-llama-8b mixtral-8b}; do presets+=(--preset "$p"); done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used,memory.total --format=csv > "$DEST/gpu.txt" 2>&1
start=$(date +%s)
python3 tools/device/slot_share.py --out "$record" "${presets[@]}" --steps "${SHARE_STEPS:-8}" \
  --command "bash tools/device/run_all.sh engine_install:90 slot_share:500 (SHARE_PRESETS='${SHARE_PRESETS:-llama-8b mixtral-8b}')" \
  2>&1 | tee "$DEST/run.log"
rc=${PIPESTATUS[0]}
echo "slot_share: rc=$rc in $(( $(date +%s) - start )) s"
if [ -s "$record" ]; then  # the tables `hotfloat slots --share` prints, from this record
  python3 - "$record" <<'PY' 2>&1 | tee "$DEST/table.txt"
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
fi
exit "$rc"
