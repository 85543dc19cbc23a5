#!/usr/bin/env bash
# prefill: verify, then bench, examples/attention_prefill_triton beside SGLang's extend kernel and FlashInfer's.
# Device run for issue 42 item 2 (attention.prefill on one GPU) in about 90 s (PREFILL_S, default the recipe's limit AREA_S - 7, else 88).
# Needs the SGLang payload installed in the same call (the engine_install recipe): SGLang's triton extend kernel
# is the stock row the engine's triton backend runs today.
#   1. background (CPU): FlashInfer's JIT build of its ragged and paged prefill and merge_state, through the bench's own
#      adapter at the bench's head dims (14/2/64 and 32/8/128), for at most PREFILL_FI_S (55) seconds (FlashInfer's
#      decode alone took 81 s on the H200; the bench waits for it when 60 s would remain after: PREFILL_FI_S=150 prefill:240);
#   2. `hotfloat verify examples/attention_prefill_triton --device cuda`, SANDBOXED, bf16 and fp16 in two concurrent
#      children: every shape (ragged prefix + extend batches, GQA 1/4/7/8, llama-8b's 32/8/128 heads, a 64-token
#      chunk after an 8192-token prefix), CUDA-graph capture and three replays on fresh inputs;
#   3. `hotfloat bench` of the example on the slot's bench shapes (bf16, uniform batches, CUDA graphs) beside SGLang's
#      triton extend_attention_fwd, and FlashInfer's prefill when step 1 built it in time (else without it, noted);
#   4. the summary (also summary.txt): each dtype's verdict, rows passed, graphs, sandbox, max error; per bench row the
#      time of ours and of each stock kernel, ours/stock (below 1 = ours faster) and ours in TFLOP/s and % of GEMM.
# Writes $OUT/prefill/: verify-{bf16,fp16}.json and .log, bench.json, bench.txt, flashinfer_build.txt, summary.txt.
#   In one lease: bash tools/device/run.sh engine_install:60 prefill:95
# Dry run on a CPU box (interpreter, no SGLang or FlashInfer; checks every command line):
#   PREFILL_DEVICE=cpu PYTHON=.venv/bin/python OUT=/tmp/o bash tools/device/recipes/prefill.sh
set -u
export PYTHONUNBUFFERED=1
t0=$(date +%s)
LIMIT=${PREFILL_S:-$(( ${AREA_S:-95} - 7 ))}
OUT=${OUT:-/tmp/out}
D="$OUT/prefill"
mkdir -p "$D"
cd "$(dirname "$0")/../../.."
DEVICE=${PREFILL_DEVICE:-cuda}
PY=${PYTHON:-python3}
EX=examples/attention_prefill_triton
left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
stamp() { echo "[prefill +$(( $(date +%s) - t0 ))s] $*"; }
HF() { "$PY" -m hotfloat.cli "$@"; }

stock=(--stock none)
if [ "$DEVICE" = cuda ]; then
  . tools/device/helpers/sglang_env.sh || exit 1
  . tools/device/helpers/flashinfer_prebuilt.sh || exit 1  # FlashInfer's modules built ahead of time, when carried
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$D/gpu.txt"
  ( timeout "${PREFILL_FI_S:-55}" "$PY" tools/device/helpers/flashinfer_build.py prefill "
from hotfloat.bench.stock_prefill import flashinfer_prefill
from hotfloat.slots import get_slot
slot, s = get_slot('attention.prefill'), flashinfer_prefill()
assert not isinstance(s, str), s
for hq, hkv, d in ((14, 2, 64), (32, 8, 128)):  # the bench's head dims; one request with a prefix runs all three
    dims = {'B': 2, 'T': 32, 'L': 16, 'P': 32, 'N': 32, 'Hq': hq, 'Hkv': hkv, 'D': d, 'Lmin': 16}
    t = {k: v.cuda() for k, v in slot.make_inputs(dims, torch.bfloat16, torch.Generator().manual_seed(0)).items()}
    t['sm_scale'] = d ** -0.5
    s.fn(t | s.prepare(t).extra)
"; echo "rc=$?" ) > "$D/flashinfer_build.txt" 2>&1 &
  fi_pid=$!
  stock=(--stock sglang --stock sgl_kernel)  # sgl_kernel: SGLang's fa3, reported as not built where the payload trims it
else
  export TRITON_INTERPRET=1
fi

# 2. verify, sandboxed: one child per dtype, concurrently (the parent draws inputs and references on one CPU thread)
stamp "verify ($DEVICE, sandboxed)"
pids=()
for dt in fp16 bf16; do
  HF verify "$EX" --device "$DEVICE" --dtype "$dt" --timeout 70 --json > "$D/verify-$dt.json" 2> "$D/verify-$dt.log" &
  pids+=($!)
done
wait "${pids[@]}"
stamp "verify done"

# 3. bench beside the stock kernels (unsandboxed: it must share the FlashInfer build step 1 writes to the JIT cache;
#    the bundle is this repository's example). --timeout ends it inside the limit, so its own child is killed.
if [ "$DEVICE" = cuda ]; then
  if [ $(( $(left) - (t0 + ${PREFILL_FI_S:-55} - $(date +%s)) )) -gt 60 ]; then stamp "waiting for FlashInfer's build"; wait "$fi_pid"; fi
  if grep -q '^rc=0' "$D/flashinfer_build.txt" 2>/dev/null; then
    stock+=(--stock flashinfer)
  else
    stamp "FlashInfer's prefill not built ($(tail -n 1 "$D/flashinfer_build.txt" 2>/dev/null)): bench without it"
  fi
fi
limit=$(( $(left) - 4 ))
if [ "$limit" -gt 10 ]; then
  stamp "bench ${stock[*]} (limit ${limit}s)"
  timeout "$limit" "$PY" -m hotfloat.cli bench "$EX" --device "$DEVICE" --shapes bench --budget "${PREFILL_BUDGET:-0.01}" \
    --unsandboxed --timeout $(( limit - 3 )) --save "$D/bench.json" --wide "${stock[@]}" > "$D/bench.txt" 2>&1
  stamp "bench rc=$?"
else
  stamp "no time left for the bench"
fi

# 4. the summary
"$PY" - "$D" <<'EOF' 2>&1 | tee "$D/summary.txt"
import json
import sys
from pathlib import Path

d = Path(sys.argv[1])
for dt in ("bf16", "fp16"):
    try:
        r = json.loads((d / f"verify-{dt}.json").read_text())
    except (OSError, ValueError) as e:
        print(f"verify {dt}: no report ({type(e).__name__}); see verify-{dt}.log")
        continue
    rows = r["rows"]
    bad = [x for x in rows if x["status"] != "PASS"]
    errs = [x["max_abs_err"] for x in rows if x["max_abs_err"] is not None]
    graphs = sum(x["shape"].startswith("graph") for x in rows)
    print(f"verify {dt}: {r['status']} {len(rows) - len(bad)}/{len(rows)} rows ({graphs} CUDA graphs), "
          f"sandboxed={r['sandboxed']}, max err {max(errs, default=0):.4g}, {r['seconds']:.0f}s")
    for x in bad[:6]:
        print(f"  {x['status']} {x['shape']}: {x['reason'][:240]}")
try:
    b = json.loads((d / "bench.json").read_text())
except (OSError, ValueError) as e:
    sys.exit(f"bench: no report ({type(e).__name__}); see bench.txt")
print(f"bench: {b['status']}, skipped: {b['skipped'] or 'none'}")
print("B x T after L | heads/D | ours us | stock us | ours/stock | ours TFLOP/s (% GEMM)")
for row in b["rows"]:
    m = row["dims"]
    us = {i["name"]: (i["graph"] or i["cold"] or {}).get("median_us") for i in row["impls"]}
    fails = [f"{i['name']} {i['check']}: {i.get('reason', '')[:80]}" for i in row["impls"] if i["check"] != "PASS"]
    stock = ", ".join(f"{n} {t:.1f}" for n, t in us.items() if not n.startswith("ours") and t) or "-"
    ratio = ", ".join(f"{n} {v:.2f}" for n, v in row["ratio"].items()) or "-"
    ours = next((t for n, t in us.items() if n.startswith("ours")), None)
    tf = f"{row['flops_per_s'] / 1e12:.0f} ({100 * row['frac_gemm']:.0f}%)" if row.get("frac_gemm") else "-"
    print(f"{m['B']} x {m['T'] // m['B']} after {m['L']} | {m['Hq']}/{m['Hkv']}/{m['D']} | "
          f"{ours and f'{ours:.1f}'} | {stock} | {ratio} | {tf}" + (f" | {'; '.join(fails)}" if fails else ""))
EOF
stamp "done"
