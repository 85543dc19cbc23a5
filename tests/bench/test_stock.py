"""Stock libraries in the bench, on CPU with torch stand-ins that follow the sgl-kernel / FlashInfer calling
convention: one is timed beside ours (its in-place fused_add_rmsnorm on fresh copies per call, so its checks hold),
one whose first call fails (a JIT build without nvcc) and one that is not installed are skipped with their reasons;
ours/stock ratios reach the JSON, the markdown table and the plot."""

import importlib.util
from pathlib import Path

import pytest

from hotfloat.bench import Options, plot, run_bench

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

STANDIN = """\
import torch
import torch.nn.functional as F


def silu_and_mul(x):
    d = x.shape[-1] // 2
    return F.silu(x[:, :d]) * x[:, d:]
"""

STANDIN_NORM = """\
import torch


def _norm(s, weight, eps):
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float()


def rmsnorm(x, weight, eps=1e-6):
    return _norm(x.float(), weight, eps).to(x.dtype)


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    # In place, as the libraries do: residual <- x + residual, x <- rmsnorm(x + residual) * weight.
    s = x.float() + residual.float()
    residual.copy_(s)
    x.copy_(_norm(s, weight, eps))
"""

BROKEN = """\
def _fail(*args, **kwargs):
    raise RuntimeError("JIT build failed: nvcc not found")


silu_and_mul = rmsnorm = fused_add_rmsnorm = _fail
"""


@pytest.fixture
def libraries(tmp_path, monkeypatch):
    """Two importable stand-in libraries on the child's path: `standin` (norms in a submodule, as FlashInfer has
    them) and `brokenstock`."""
    (tmp_path / "standin").mkdir()
    (tmp_path / "standin" / "__init__.py").write_text(STANDIN)
    (tmp_path / "standin" / "norm.py").write_text(STANDIN_NORM)
    (tmp_path / "brokenstock.py").write_text(BROKEN)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{ROOT / 'libs' / 'hotfloat'}")
    return ("standin", "brokenstock", "hotfloat_no_such_library")


def test_in_place_stock_gets_fresh_copies_and_ratios_reach_json_table_and_plot(libraries, tmp_path):
    opts = Options(device="cpu", shapes=({"T": 3, "H": 256}, {"T": 1, "H": 512}), stock=libraries)
    r = run_bench(str(EXAMPLES / "fused_add_rmsnorm_triton"), opts)
    assert r.status == "PASS"
    for row in r.rows:
        names = [i.name for i in row.impls]
        assert names == ["ours:default", "torch-eager", "torch add+rms_norm", "standin"]
        # Called repeatedly on each input set: it passes only because every call gets fresh copies of x and residual.
        assert all(i.check == "PASS" for i in row.impls), [i.reason for i in row.impls]
        times = {i.name: i.cold.median_us for i in row.impls}
        assert row.ratio == pytest.approx({n: times["ours:default"] / times[n] for n in names[1:]})
        assert row.best_stock == max(row.ratio, key=row.ratio.get)
        assert row.ratio_best == row.ratio[row.best_stock]
    reasons = {(s.slot, s.name): s.reason for s in r.skipped}
    assert reasons == {
        ("norm.fused_add_rmsnorm", "brokenstock"): "first call failed: RuntimeError: JIT build failed: nvcc not found",
        ("norm.fused_add_rmsnorm", "hotfloat_no_such_library"): "not installed",
    }

    spec = importlib.util.spec_from_file_location("bench_markdown", ROOT / "tools" / "bench_markdown.py")
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    text = md.render(r)
    row = r.rows[0]
    assert "| standin us (ours/standin) |" in text
    assert f"({row.ratio['standin']:.2f})" in text and f"{row.ratio_best:.2f} ({row.best_stock})" in text
    assert "brokenstock skipped for norm.fused_add_rmsnorm: first call failed" in text
    plot(r, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_stock_that_returns_outputs_joins_silu_and_rmsnorm(libraries):
    for example, slot, dim in (
        ("silu_triton", "activation.silu_and_mul", "D"),
        ("rmsnorm_triton", "norm.rmsnorm", "H"),
    ):
        r = run_bench(str(EXAMPLES / example), Options(device="cpu", shapes=({"T": 2, dim: 256},), stock=libraries[:1]))
        assert r.status == "PASS" and r.skipped == []
        (row,) = r.rows
        assert row.slot == slot and row.impls[-1].name == "standin" and row.impls[-1].check == "PASS"
        assert "standin" in row.ratio and row.ratio_best is not None


def test_cli_takes_stock_libraries_and_says_why_one_is_skipped(capsys):
    from hotfloat.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "bench",
                str(EXAMPLES / "silu_triton"),
                "--device",
                "cpu",
                "--shape",
                "T=2,D=256",
                "--stock",
                "none",
                "--stock",
                "hotfloat_no_such_library",
                "--wide",
            ]
        )  # the stock kernel's column is one of --wide's
    out = capsys.readouterr()
    assert exit_.value.code == 0, out.err
    assert "stock hotfloat_no_such_library skipped for activation.silu_and_mul: not installed" in out.err
    assert "ours/best" in out.out and "torch-eager" in out.out
