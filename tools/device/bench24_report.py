"""Reads what tools/device/bench24.sh wrote: which bench rows miss issue 24's targets, the Nsight Compute targets that
explain them, and the summary table printed at the end of the run.

    bench24_report.py misses DIR [--limit N]   one `op:T:H:impl` per profile to take, most telling first
    bench24_report.py table DIR               every report's rows against the targets, the sweep, the profiles

Targets (issue 24, token-row slots): [A] ours at least as fast as the best stock kernel; [B] within 1.5x of the graph
launch floor at 1-32 tokens; [C] >= 80% of measured copy bandwidth from 128 tokens up, >= 90% from 4096 tokens.
attention.decode rows are held to [A] only (issue 25 sets no bandwidth target)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

OPS = {"activation.silu_and_mul": "silu", "norm.rmsnorm": "rmsnorm", "norm.fused_add_rmsnorm": "fused"}
"""Slot -> the op name tools/device/bench_profile.py takes."""
PROFILED = ("sgl_kernel", "flashinfer")
"""Stock kernels bench_profile.py can run (the torch paths are several kernels each: not profiled)."""
METRICS = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__waves_per_multiprocessor",
    "lts__t_sector_hit_rate.pct",
)


def reports(directory: Path) -> list[dict]:
    """The bench reports in DIR (`hotfloat bench --save` JSON), by file name."""
    out = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "rows" in data and "ceilings" in data:
            out.append(data | {"file": path.name})
    return out


def missed(row: dict) -> str:
    """The targets this row misses, as letters ('' when it meets them all)."""
    out = ""
    if row["ratio_best"] is not None and row["ratio_best"] > 1.0:
        out += "A"
    if row["slot"] not in OPS or row["time_us"] is None:
        return out
    tokens, frac = row["tokens"], row["frac_copy_bw"] or 0.0
    if tokens <= 32 and (row["floor_multiple"] or 0.0) > 1.5:
        out += "B"
    if tokens >= 128 and frac < (0.9 if tokens >= 4096 else 0.8):
        out += "C"
    return out


def _hidden(row: dict) -> int:
    return row["dims"]["D" if row["slot"] == "activation.silu_and_mul" else "H"]


def targets(reps: list[dict], limit: int) -> list[str]:
    """Profiles to take, most telling first: each [A] miss (ours and the stock that beat it, same shape), then the
    [C] misses furthest below their bandwidth target, then the [B] misses furthest above the floor (ours only)."""
    rows = [r for rep in reps for r in rep["rows"] if r["slot"] in OPS and r["time_us"] is not None]
    picks: list[str] = []

    def add(row: dict, impl: str) -> None:
        key = f"{OPS[row['slot']]}:{row['tokens']}:{_hidden(row)}:{impl}"
        if key not in picks:
            picks.append(key)

    for row in sorted((r for r in rows if "A" in missed(r)), key=lambda r: -r["ratio_best"]):
        add(row, "ours")
        if row["best_stock"] in PROFILED:
            add(row, row["best_stock"])
    for row in sorted((r for r in rows if "C" in missed(r)), key=lambda r: r["frac_copy_bw"] or 0.0):
        add(row, "ours")
    for row in sorted((r for r in rows if "B" in missed(r)), key=lambda r: -(r["floor_multiple"] or 0.0)):
        add(row, "ours")
    return picks[:limit]


def _label(row: dict) -> str:
    d = row["dims"]
    if row["slot"] == "attention.decode":
        return f"B{d['B']} S{d['S']} {d['Hq']}/{d['Hkv']} D{d['D']}"
    return f"{row['tokens']}x{_hidden(row)}"


def _us(impl: dict) -> float | None:
    stat = impl["graph"] or impl["cold"]
    return stat["median_us"] if stat else None


def table(directory: Path) -> None:
    """Prints the summary: per report its ceilings and skipped stocks, per row every implementation's time (a `!`
    marks a failed check), ours / best stock, x floor, % copy and the missed targets; then the sweep and profiles."""
    reps = reports(directory)
    for rep in reps:
        c = rep["ceilings"]
        floor = c["floor_graph_us"] or c["floor_cold_us"]
        print(
            f"{rep['file']}: {rep['bundle_id']} {rep['status']} on {rep['environment'].get('gpu', rep['device'])}; "
            f"copy {c['copy_Bps'] / 1e12:.2f} TB/s, floor {floor:.2f} us"
            + "".join(f"; {s['name']} skipped for {s['slot']} ({s['reason'][:100]})" for s in rep["skipped"])
        )
        names = list(dict.fromkeys(i["name"] for r in rep["rows"] for i in r["impls"]))
        print(
            f"  {'shape':>22} | "
            + " | ".join(f"{n.split(':')[0]:>13}" for n in names)
            + f" | {'ours/best (stock)':28} | x floor | % copy | missed"
        )
        for r in rep["rows"]:
            by = {i["name"]: i for i in r["impls"]}
            cells = []
            for n in names:
                us = _us(by[n]) if n in by else None
                mark = "" if n not in by or by[n]["check"] == "PASS" else "!"
                cells.append(f"{'-' if us is None else f'{us:.2f}'}{mark:1}".rjust(13))
            best = f"{r['ratio_best']:.2f} ({r['best_stock']})" if r["ratio_best"] is not None else "-"
            print(
                f"  {_label(r):>22} | " + " | ".join(cells) + f" | {best:28} | {r['floor_multiple'] or 0:7.2f} | "
                f"{100 * (r['frac_copy_bw'] or 0):5.1f}% | {missed(r) or '-'}"
            )
        counts = {k: sum(k in missed(r) for r in rep["rows"]) for k in "ABC"}
        print(f"  misses of {len(rep['rows'])} rows: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    sweep = directory / "sweep.txt"
    if sweep.exists():
        print("sweep (graph-replay us per config; best vs the example's default):")
        print(sweep.read_text().rstrip())
    for path in sorted(directory.glob("ncu_*.csv")):
        print(f"{path.stem}: " + _ncu(path))


def _ncu(path: Path) -> str:
    """The key metrics of each profiled launch in an `ncu --csv` file, or why it holds none."""
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(lines))
    if not rows or "Metric Name" not in rows[0]:
        tail = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()][-2:]
        return "no metrics: " + " | ".join(tail)[:300]
    launches: dict[str, dict[str, str]] = {}
    for row in rows:
        launches.setdefault(f"{row['ID']} {row['Kernel Name'][:40]}", {})[row["Metric Name"]] = (
            f"{row['Metric Value']}{row.get('Metric Unit') or ''}"
        )
    return "; ".join(
        f"{k}: " + ", ".join(f"{m.split('__')[1]}={v[m]}" for m in METRICS if m in v) for k, v in launches.items()
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("misses")
    m.add_argument("dir", type=Path)
    m.add_argument("--limit", type=int, default=4)
    t = sub.add_parser("table")
    t.add_argument("dir", type=Path)
    a = p.parse_args()
    if not a.dir.is_dir():
        sys.exit(f"error: {a.dir}: not a directory")
    if a.cmd == "misses":
        print("\n".join(targets(reports(a.dir), max(a.limit, 0))))
    else:
        table(a.dir)


if __name__ == "__main__":
    main()
