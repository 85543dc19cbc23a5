"""The committed H200 files tools/calibration_tables.py reads (the raw collections, the ladder's evidence, the
candidates' kept outputs, all under docs/qualify-runs/), and the Markdown its tables are written in."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "qualify-runs"
RAWS = {
    "0.5B, unsandboxed (2026-12-03)": "calibration-h200-2026-12-03-unsandboxed.raw.json",
    "0.5B, sandboxed (2026-12-03)": "calibration-h200-qwen0.5b-sandboxed.raw.json",
    "8B candidates (seed 11)": "calibration-h200-llama8b-candidates.raw.json",
    "8B stock6 (seed 12)": "calibration-h200-llama8b-stock6.raw.json",
    "8B stock6 (seed 13)": "calibration-h200-llama8b-stock6-seed13.raw.json",
    "8B control (seed 406650)": "calibration-h200-llama8b-control-seed406650.raw.json",
    "8B control (seed 406966)": "calibration-h200-llama8b-control-seed406966.raw.json",
    "8B control (seed 407066)": "calibration-h200-llama8b-control-seed407066.raw.json",
    "8B null (seed 417951)": "calibration-h200-llama8b-null-seed417951.raw.json",
    "8B null (seed 418051)": "calibration-h200-llama8b-null-seed418051.raw.json",
    "8B null (seed 418449)": "calibration-h200-llama8b-null-seed418449.raw.json",
    "8B null (seed 418549)": "calibration-h200-llama8b-null-seed418549.raw.json",
    "8B null (seed 418649)": "calibration-h200-llama8b-null-seed418649.raw.json",
    "8B null (seed 418978)": "calibration-h200-llama8b-null-seed418978.raw.json",
    "8B null (seed 419078)": "calibration-h200-llama8b-null-seed419078.raw.json",
    "8B null (seed 419178)": "calibration-h200-llama8b-null-seed419178.raw.json",
}
LADDER = {
    "examples/silu_triton": ("isolation-silu_triton", "accurate (Triton), bit-exact here"),
    "examples/fused_add_rmsnorm_triton": ("ladder-fused_add_rmsnorm_triton", "accurate (Triton)"),
    "examples/attention_decode_triton": ("ladder-attention_decode_triton", "accurate (Triton)"),
    "silu_rel_0_5": ("ladder-silu_rel_0_5", "silu out x (1 +- 0.5%)"),
    "silu_rel_1": ("ladder-silu_rel_1", "silu out x (1 +- 1%)"),
    "silu_1pct_with_fused": ("audit-silu_1pct_with_fused", "silu x (1 +- 1%) + accurate fused op"),
    "silu_rel_3": ("ladder-silu_rel_3", "silu out x (1 +- 3%)"),
    "silu_rows_1pct": ("ladder-silu_rows_1pct", "1% of silu rows 25% off"),
    "silu_after_n_sparse": ("audit-silu_after_n_sparse", "silu exact, then 1 element in 1024 0.25 off"),
    "fused_rel_0_5": ("ladder-fused_rel_0_5", "fused out x (1 +- 0.5%)"),
    "fused_rel_1": ("ladder-fused_rel_1", "fused out x (1 +- 1%)"),
}
"""Issue 32's ladder on the H200: run -> (evidence file under docs/qualify-runs, what its kernel does)."""
CANDIDATES = "calibration-h200-llama8b-candidates.raw.json"


def raw_file(name: str):
    from hotfloat.qualify.calibrate.files import load_raw

    return load_raw(RUNS / name)


def span(xs, fmt: str, sep: str = " to ") -> str:
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}{sep}{fmt.format(hi)}"


def md_table(head: list[str], rows: list[list]) -> str:
    return (
        "\n".join(
            [
                "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head),
                *("| " + " | ".join(str(c) for c in r) + " |" for r in rows),
            ]
        )
        + "\n"
    )
