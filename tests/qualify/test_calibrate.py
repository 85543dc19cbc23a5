"""Calibration: the analysis on a synthetic pool with known effects, and the real command on the tiny engine."""

import json

import numpy as np
import pytest

from hotfloat.qualify.calibrate import analyse
from hotfloat.qualify.records import RuleConfig, RunFrame


def pool(effects: dict[int, float], rounds=6, sigma_run=0.002, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.1, 1.0, 12)
    order = [lv for _ in range(rounds) for l in effects for lv in (None, l)] + [None]
    out = []
    for i, lv in enumerate(order):
        v = base * (1 + rng.normal(0, sigma_run)) * (1 + rng.normal(0, 0.003, 12)) * (1 - (effects[lv] if lv is not None else 0))
        out.append((lv, RunFrame(index=i, role="B" if lv is None else "C", ok=True, latency_s=[v.tolist()],
                                 tokens=[[[1]] * 12], logprobs=[[[-1.0]] * 12], margins=[[[1.0]] * 12], wall_s=2.0)))
    return out


def test_analysis_reports_false_pass_and_smallest_detected_effect():
    report = analyse(pool({0: 0.0, 1: 0.004, 4: 0.04}), RuleConfig(bootstrap=200), trials=300)
    rows = {r.level: r for r in report.levels}
    assert report.false_pass_rate <= 0.01 and report.model_false_pass_rate <= 0.02
    assert rows[4].pass_rate >= 0.95 and rows[4].true_improvement == pytest.approx(0.04, abs=0.005)
    assert rows[1].pass_rate < 0.95
    assert report.smallest_detected == pytest.approx(rows[4].true_improvement)
    assert 0 < report.sigma_run < 0.01 and report.qualification_minutes > 0


def test_calibrate_command_runs_real_engines(capsys):
    from hotfloat.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["qualify", "calibrate", "--levels", "0,2", "--rounds", "1", "--base-passes", "2", "--passes", "1",
              "--trials", "50", "--json"])
    assert e.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"] == 5 and [r["level"] for r in report["levels"]] == [0, 2]
    assert report["run_seconds"] > 0 and report["sigma_run"] >= 0


def test_budget_stops_before_a_pair_that_would_not_fit():
    """With no time left after the first baseline run, no candidate run starts and the pool still ends on B."""
    from hotfloat.qualify.calibrate import pool_runs
    from hotfloat.qualify.records import EngineSpec
    from hotfloat.qualify.workload import make_workload

    pool = pool_runs(EngineSpec(preset="tiny", dtype="fp32", device="cpu", decode="static"),
                     make_workload("tiny", 512, passes=1, warmup_passes=0, seed=1), [0, 2], 2, 2, budget_s=0.0)
    assert [(lv, f.role) for lv, f in pool] == [(None, "B")] and pool[0][1].ok
