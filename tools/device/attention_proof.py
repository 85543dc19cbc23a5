"""Device proof for attention.decode (issue 25): bench the example beside SGLang's own triton decode kernel, verify it
and the slot's exploit bundles on cuda, and summarise. Run by tools/device/attention.sh; each step writes JSON.

    attention_proof.py bench  OUT.json [--impl ours,sglang-triton,flashinfer]
    attention_proof.py verify OUT.json BUNDLE [--dtype bf16 ...] [--max-shapes N] [--timeout S] [--trials N]
    attention_proof.py table  DIR          (prints the summary table from DIR's JSON files)

Bench: every bench shape of the slot (uniform lengths, so the KV bytes are exact), bf16, each implementation captured
in a CUDA graph over enough input sets to overflow L2 (a decode step reads each layer's KV once, cold), timed by
CUDA events over the replays; each output is first checked against the slot's fp32 reference. Bandwidth is KV
(plus q, out, page indices) bytes over time, next to a measured device copy rate and the H200's 4.8 TB/s spec.
The implementations benched are built in attention_impls.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch
from attention_impls import IMPLS

SPEC_BPS = 4.8e12
SET_BYTES = 256 << 20
"""Input sets rotated through per graph: at least this many bytes, so L2 (50 MB) never holds the next call's KV."""


def _sets(slot, dims, dtype, nbytes):
    """Set 0 from the slot's own generator (checked against the reference); the rest fresh on the GPU."""
    gen = torch.Generator().manual_seed(7)
    first = {k: v.cuda() for k, v in slot.make_inputs(dims, dtype, gen).items()} | slot.make_scalars(dims, gen)
    count = max(1, min(512, -(-SET_BYTES // nbytes)))
    sets = [first]
    for _ in range(count - 1):
        s = dict(first)
        for name in ("q", "k_buffer", "v_buffer"):
            s[name] = torch.randn_like(first[name])
        s["kv_indices"] = torch.randperm(first["kv_indices"].numel(), device="cuda")
        sets.append(s)
    for s in sets:
        s["out"] = torch.full_like(s["q"], float("nan"))
    return sets


def _time(calls, budget_s: float = 0.3) -> float:
    """Median microseconds per call over graph replays of all calls in sequence."""
    for c in calls:
        c()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for c in calls:
            c()
    graph.replay()
    torch.cuda.synchronize()
    samples, deadline = [], time.monotonic() + budget_s
    while len(samples) < 5 or (time.monotonic() < deadline and len(samples) < 200):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / len(calls))
    return statistics.median(samples)


def _copy_bps() -> float:
    """Device-to-device copy rate (read + write bytes per second) of 1 GiB: the practical bandwidth ceiling."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = _time([lambda: dst.copy_(src)], 0.3)
    return 2 * src.numel() / (us * 1e-6)


def bench(out_path: Path, impls: list[str]) -> None:
    from hotfloat.slots import get_slot

    slot = get_slot("attention.decode")
    dtype = torch.bfloat16
    rows = []
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows, "errors": {}}
    result["copy_Bps"] = _copy_bps()
    for shape in slot.bench_shapes:
        dims = dict(shape.dims)
        if shape.cpu:
            continue  # the interpreter's smoke shape: nothing to learn about the GPU
        nbytes = slot.bytes_moved(dims, 2)
        sets = _sets(slot, dims, dtype, nbytes)
        ref = slot.reference(sets[0])["out"]
        tol = slot.tolerances["bf16"]
        row = {"dims": dims, "bytes": nbytes, "impls": {}}
        for name in impls:
            started = time.monotonic()
            try:
                calls = IMPLS[name](dims, sets)
                for s in sets:
                    s["out"].fill_(float("nan"))
                calls[0]()
                torch.cuda.synchronize()
                err = (sets[0]["out"].float() - ref).abs()
                ok = bool((err <= tol.atol + tol.rtol * ref.abs()).all())
                us = _time(calls)
                row["impls"][name] = {
                    "us": us,
                    "GBps": nbytes / (us * 1e-6) / 1e9,
                    "check": "PASS" if ok else "FAIL",
                    "max_abs_err": float(err.max()),
                    "frac_spec": nbytes / (us * 1e-6) / SPEC_BPS,
                    "frac_copy": nbytes / (us * 1e-6) / result["copy_Bps"],
                    "seconds": round(time.monotonic() - started, 2),
                }
            except Exception as e:  # one implementation failing to import or run is a row, not the end of the run
                result["errors"].setdefault(name, f"{type(e).__name__}: {e}"[:400])
                traceback.print_exc()
        rows.append(row)
        print(json.dumps(row), flush=True)
        out_path.write_text(json.dumps(result, indent=1))  # after every row: a timeout keeps what finished
        del sets
        torch.cuda.empty_cache()


def verify(
    out_path: Path, bundle_dir: str, dtypes: list[str], max_shapes: int | None, timeout: float, device: str, trials: int
) -> None:
    from hotfloat.bundle import load_bundle
    from hotfloat.errors import InfrastructureError
    from hotfloat.verify import VerifyOptions, verify_bundle

    bundle = load_bundle(bundle_dir)
    options = VerifyOptions(device=device, dtypes=dtypes, max_shapes=max_shapes, timeout_s=timeout, trials=trials)
    note = ""
    try:
        report = verify_bundle(bundle, options)
    except InfrastructureError as e:  # the sandbox cannot start on this machine: say so, and verify without it
        note = f"sandbox unavailable ({e}); verified UNSANDBOXED"
        report = verify_bundle(bundle, options.model_copy(update={"sandboxed": False}))
    data = json.loads(report.model_dump_json())
    data["note"] = note
    out_path.write_text(json.dumps(data, indent=1))
    print(f"{bundle_dir}: {report.status.value} sandboxed={report.sandboxed} {report.seconds}s {note}")
    for row in report.rows:
        err = "" if row.max_abs_err is None else f"{row.max_abs_err:.3g}"
        print(f"  {row.dtype:5} {row.shape[:70]:70} {row.status.value:5} {err:8} {row.reason[:100]}")


def table(directory: Path) -> None:
    bench_file = directory / "bench.json"
    if bench_file.exists():
        data = json.loads(bench_file.read_text())
        extra = directory / "flashinfer.json"
        if extra.exists():
            more = json.loads(extra.read_text())
            data["errors"].update(more["errors"])
            for row, other in zip(data["rows"], more["rows"], strict=False):
                if row["dims"] == other["dims"]:
                    row["impls"].update(other["impls"])
        print(f"bench on {data['device']}: copy {data['copy_Bps'] / 1e12:.2f} TB/s; errors: {data['errors'] or 'none'}")
        names = sorted({n for r in data["rows"] for n in r["impls"]}, key=lambda n: n != "ours")
        print(
            f"{'B':>4} {'S':>6} {'Hq/Hkv':>7} {'D':>4} {'KV MiB':>7} | "
            + " | ".join(f"{n:>26}" for n in names)
            + " | ours vs sglang"
        )
        for r in data["rows"]:
            d = r["dims"]
            cells = []
            for n in names:
                i = r["impls"].get(n)
                cells.append(
                    f"{'-':>26}"
                    if i is None
                    else f"{i['us']:8.1f}us {i['GBps']:6.0f}GB/s {i['frac_spec']:4.0%} {i['check']:4}"
                )
            ours, stock = r["impls"].get("ours"), r["impls"].get("sglang-triton")
            ratio = f"{stock['us'] / ours['us']:.2f}x" if ours and stock else "-"
            print(
                f"{d['B']:>4} {d['S']:>6} {d['Hq']:>3}/{d['Hkv']:<3} {d['D']:>4} {r['bytes'] / 2**20:7.1f} | "
                + " | ".join(cells)
                + f" | {ratio}"
            )
    for f in sorted(directory.glob("verify-*.json")):
        v = json.loads(f.read_text())
        fails = [r for r in v["rows"] if r["status"] == "FAIL"]
        passes = sum(r["status"] == "PASS" for r in v["rows"])
        reason = fails[0]["reason"][:90] if fails else ""
        print(
            f"{f.stem:40} {v['status']:5} pass={passes} fail={len(fails)} sandboxed={v['sandboxed']} {reason} "
            f"{v['note']}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("out", type=Path)
    b.add_argument("--impl", default="ours,sglang-triton")
    v = sub.add_parser("verify")
    v.add_argument("out", type=Path)
    v.add_argument("bundle")
    v.add_argument("--dtype", action="append", default=None)
    v.add_argument("--max-shapes", type=int, default=None)
    v.add_argument("--timeout", type=float, default=300.0)
    v.add_argument("--device", default="cuda", help="cpu for a dry run of this script off the GPU")
    v.add_argument("--trials", type=int, default=3, help="eager calls per shape (graph replays stay 3)")
    t = sub.add_parser("table")
    t.add_argument("dir", type=Path)
    a = p.parse_args()
    if a.cmd == "bench":
        bench(a.out, a.impl.split(","))
    elif a.cmd == "verify":
        verify(a.out, a.bundle, a.dtype or ["bf16", "fp16"], a.max_shapes, a.timeout, a.device, a.trials)
    else:
        table(a.dir)


if __name__ == "__main__":
    sys.exit(main())
