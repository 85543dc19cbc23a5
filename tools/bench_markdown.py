"""Renders `hotfloat bench --save` reports as the markdown tables of docs/benchmarks.md: ours beside every stock kernel,
each stock cell with ours/stock in brackets (< 1: ours faster), and the ratio to the fastest stock kernel.

Usage: .venv/bin/python tools/bench_markdown.py REPORT.json [REPORT.json ...]"""

import sys

from hotfloat.bench.records import Report


def _us(impl) -> str:
    return f"{(impl.graph or impl.cold).median_us:.2f}" if impl and impl.cold else "-"


def render(r: Report) -> str:
    c, env = r.ceilings, r.environment
    lines = [
        f"**{r.bundle_id}** (identity `{r.identity[:16]}`), {env.get('gpu', r.device)}, driver {env.get('driver', '-')}, "
        f"CUDA {env.get('cuda', '-')}, torch {env['torch']}, triton {env['triton']}, python {env['python']}; "
        f"measured copy {c.copy_Bps / 1e12:.2f} TB/s, GEMM {c.gemm_flops / 1e12:.0f} TFLOP/s, launch floor "
        f"{c.floor_graph_us or 0:.2f} us (graph) / {c.floor_cold_us:.2f} us (cold); status {r.status}",
        "",
    ]
    stocks = list(dict.fromkeys(i.name for row in r.rows for i in row.impls if not i.name.startswith("ours")))
    lines.append(
        "| shape (T x hidden) | ours us | "
        + " | ".join(f"{s} us (ours/{s})" for s in stocks)
        + " | ours / best stock | % copy BW | x floor | check |"
    )
    lines.append("|" + " --- |" * (6 + len(stocks)))
    for row in r.rows:
        ours = row.impls[0] if row.impls and row.impls[0].name.startswith("ours") else None
        cells = [" x ".join(str(v) for v in row.dims.values()), f"{row.time_us:.2f}" if row.time_us else "-"]
        for s in stocks:
            impl = next((i for i in row.impls if i.name == s), None)
            mark = "" if impl is None or impl.check == "PASS" else " FAIL"
            cells.append(_us(impl) + (f" ({row.ratio[s]:.2f})" if s in row.ratio else "") + mark)
        cells += [
            f"{row.ratio_best:.2f} ({row.best_stock})" if row.ratio_best else "-",
            f"{100 * row.frac_copy_bw:.1f}%" if row.frac_copy_bw else "-",
            f"{row.floor_multiple:.2f}" if row.floor_multiple else "-",
            ours.check if ours else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [f"\n{s.name} skipped for {s.slot}: {s.reason}" for s in r.skipped]
    return "\n".join(lines)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(render(Report.model_validate_json(open(path).read())) + "\n")
