"""The gate ladder's bundles (tools/device/ladder/make.py): each passes scan and, armed on CPU, is wrong by exactly
what its name says; the audit catches the ones wrong beyond the verify tolerance."""

import importlib.util
from pathlib import Path

import pytest
import torch

from hotfloat.audit.config import AuditConfig
from hotfloat.audit.layout import ROWWISE
from hotfloat.bundle import load_bundle
from hotfloat.qualify.audit import audit_round
from hotfloat.qualify.engines.worker import audit_parts
from hotfloat.scan import scan_bundle
from hotfloat.seams import arm

MAKE = Path(__file__).resolve().parents[2] / "tools/device/ladder/make.py"


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("ladder_make", MAKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {d.name: d for d in module.make(tmp_path_factory.mktemp("ladder"), after=3)}


def stock_silu(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.silu(x[..., :d]) * x[..., d:]


def test_every_rung_passes_scan(ladder):
    assert len(ladder) == 12
    for d in ladder.values():
        report = scan_bundle(load_bundle(d))
        assert report.clean, (d.name, report)


@pytest.mark.parametrize("rel", [0.1, 0.5, 1, 3])
def test_relative_rungs_are_off_by_their_percentage(ladder, rel):
    tag = str(rel).replace(".", "_")
    x = torch.randn(64, 512, dtype=torch.float64).float()
    y = arm(ladder[f"silu_rel_{tag}"]).silu_and_mul(x, stock=None)
    ratio = (y / stock_silu(x))[stock_silu(x).abs() > 1e-3]
    assert torch.allclose((ratio - 1).abs(), torch.tensor(rel / 100), rtol=1e-3)
    assert abs(float((ratio - 1).mean())) < rel / 100 / 10  # the signs balance
    r = torch.randn(64, 256)
    w = torch.rand(256) + 0.5
    out, res = arm(ladder[f"fused_rel_{tag}"]).fused_add_rmsnorm(x[:, :256], r, w, 1e-6, stock=None)
    s = x[:, :256] + r
    want = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    assert torch.equal(res, s) and torch.allclose(((out / want) - 1).abs(), torch.tensor(rel / 100), rtol=1e-3)


def test_the_row_rung_is_wrong_on_about_one_row_in_a_hundred(ladder):
    x = torch.randn(4000, 64)
    wrong = ~torch.isclose(arm(ladder["silu_rows_1pct"]).silu_and_mul(x, stock=None), stock_silu(x)).all(-1)
    assert 15 <= int(wrong.sum()) <= 70


@pytest.mark.parametrize("name", ["silu_after_n", "silu_after_n_sparse"])
def test_after_n_rungs_turn_wrong_and_the_audit_names_the_slot(ladder, name):
    cfg = AuditConfig((1 << 62) + 2, keep=6, rows=64, slots=ROWWISE)
    router = arm(ladder[name], audit=cfg)
    x = torch.randn(64, 2048)
    exact = [torch.equal(router.silu_and_mul(x, stock=None), stock_silu(x)) for _ in range(6)]
    assert exact == [True] * 3 + [False] * 3
    rec = audit_round(1, "C", 0, audit_parts(router.audit.dump(), 0), cfg)
    assert rec.slots["activation.silu_and_mul"].calls_failed == 3
