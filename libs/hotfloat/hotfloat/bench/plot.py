"""A PNG of a bench report: our time over each stock kernel's, and the fraction of copy bandwidth each one reaches."""

from __future__ import annotations

from pathlib import Path

from .records import Report


def plot(report: Report, path: str | Path) -> None:
    """Two panels sharing the shape axis; on CPU the title says the numbers are meaningless."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report.rows if r.time_us]
    labels = [f"{r.slot.split('.')[-1]} {r.dtype}\n" + "x".join(str(v) for v in r.dims.values()) for r in rows]
    names = list(dict.fromkeys(i.name for r in rows for i in r.impls))
    stocks = [n for n in names if not n.startswith("ours")]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8.0, 0.6 * len(rows) + 3), 8), sharex=True)
    width = 0.8 / max(1, len(stocks))
    for k, name in enumerate(stocks):
        top.bar(
            [x + k * width for x in range(len(rows))],
            [r.ratio.get(name, float("nan")) for r in rows],
            width,
            label=f"vs {name}",
        )
    top.axhline(1.0, color="black", linewidth=0.8)
    top.set_yscale("log")
    top.set_ylabel("ours / stock time (< 1: ours faster)")
    top.legend(fontsize=8)
    width = 0.8 / max(1, len(names))
    for k, name in enumerate(names):
        fracs = []
        for r in rows:
            impl = next((i for i in r.impls if i.name == name), None)
            t = (impl.graph or impl.cold).median_us if impl and impl.cold else None
            fracs.append(r.bytes / (t * 1e-6) / report.ceilings.copy_Bps if t else 0.0)
        bottom.bar([x + k * width for x in range(len(rows))], fracs, width, label=name)
    bottom.set_ylabel("fraction of measured copy bandwidth")
    bottom.set_xticks(range(len(rows)), labels, fontsize=7, rotation=60)
    bottom.legend(fontsize=8)
    title = f"hotfloat bench {report.bundle_id} on {report.environment.get('gpu', report.device)}"
    if not report.meaningful:
        title += " (CPU interpreter: numbers meaningless)"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
