"""tools/device/bench24_report.py: which bench rows miss issue 24's targets, which launches the device run profiles for
them (an [A] miss brings the stock kernel that beat ours), and the summary table it ends its log with."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench24_report", ROOT / "tools" / "device" / "bench24_report.py")
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def _row(slot, tokens, hidden, ratio_best=0.9, best="flashinfer", floor=1.2, frac=0.95):
    dims = {"T": tokens, "D" if slot == "activation.silu_and_mul" else "H": hidden}
    impl = {"name": "ours:default", "graph": {"median_us": 1.0}, "cold": {"median_us": 2.0}, "check": "PASS"}
    return {
        "slot": slot,
        "dims": dims,
        "tokens": tokens,
        "time_us": 1.0,
        "ratio_best": ratio_best,
        "best_stock": best,
        "floor_multiple": floor,
        "frac_copy_bw": frac,
        "impls": [impl],
    }


@pytest.mark.parametrize(
    "row, letters",
    [
        (_row("norm.rmsnorm", 8, 4096), ""),
        (_row("norm.rmsnorm", 8, 4096, ratio_best=1.03), "A"),
        (_row("norm.rmsnorm", 32, 4096, floor=1.6), "B"),
        (_row("norm.rmsnorm", 128, 4096, frac=0.79, floor=9.0), "C"),
        (_row("norm.rmsnorm", 4096, 8192, frac=0.85), "C"),
        (_row("norm.rmsnorm", 1024, 4096, frac=0.85), ""),
        (_row("attention.decode", 8, 0, ratio_best=1.2, frac=0.1, floor=9.0), "A"),
    ],
)
def test_misses_follow_the_issue_targets(row, letters):
    assert report.missed(row) == letters


def test_profiles_take_each_speed_miss_with_its_stock_then_bandwidth_then_floor():
    rows = [
        _row("activation.silu_and_mul", 128, 4096, ratio_best=1.03, frac=0.4),
        _row("norm.fused_add_rmsnorm", 256, 8192, frac=0.6),
        _row("norm.fused_add_rmsnorm", 128, 896, frac=0.1),
        _row("norm.rmsnorm", 1, 8192, floor=2.7, best="torch.rms_norm", ratio_best=1.01),
        _row("norm.rmsnorm", 8, 2880, floor=2.0),
    ]
    got = report.targets([{"rows": rows}], limit=10)
    assert got == [
        "silu:128:4096:ours",
        "silu:128:4096:flashinfer",
        "rmsnorm:1:8192:ours",
        "fused:128:896:ours",
        "fused:256:8192:ours",
        "rmsnorm:8:2880:ours",
    ]
    assert report.targets([{"rows": rows}], limit=2) == got[:2]


def test_table_lists_every_row_with_its_misses_and_says_why_a_profile_is_empty(tmp_path, capsys):
    rows = [_row("norm.rmsnorm", 8, 4096, ratio_best=1.03)]
    data = {
        "bundle_id": "b",
        "status": "PASS",
        "device": "cuda",
        "environment": {"gpu": "H200"},
        "rows": rows,
        "ceilings": {"copy_Bps": 4.2e12, "floor_graph_us": 0.52, "floor_cold_us": 3.0},
        "skipped": [{"slot": "norm.rmsnorm", "name": "flashinfer", "reason": "not installed"}],
    }
    (tmp_path / "rmsnorm_triton.json").write_text(json.dumps(data))
    (tmp_path / "ncu_rmsnorm_8x4096_ours.csv").write_text("==ERROR== ERR_NVGPUCTRPERM\n")
    report.table(tmp_path)
    out = capsys.readouterr().out
    assert "flashinfer skipped for norm.rmsnorm (not installed)" in out
    assert "8x4096" in out and "1.03 (flashinfer)" in out and "| A" in out and "misses of 1 rows: A 1, B 0, C 0" in out
    assert "ncu_rmsnorm_8x4096_ours: no metrics: ==ERROR== ERR_NVGPUCTRPERM" in out
