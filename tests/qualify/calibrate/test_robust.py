"""The robust process model: one far pass moves the moment fit but not the robust one, clean data fit alike by both,
only the far passes are touched, and the committed record's robust model comes back from its raw files."""

from pathlib import Path

import numpy as np
import pytest

from hotfloat.qualify.calibrate.files import (
    CalibrationRaw,
    CalibrationRecord,
    Preregistration,
    RawRound,
    RobustModel,
    load_raw,
)
from hotfloat.qualify.calibrate.analyse import analyse
from hotfloat.qualify.calibrate.model import fit
from hotfloat.qualify.calibrate.robust import CUT, winsorize
from hotfloat.qualify.records import EngineSpec, RuleConfig
from hotfloat.qualify.workload import make_workload

DOCS = Path(__file__).resolve().parents[3] / "docs"
RULE = RuleConfig(look_rounds=5, max_looks=2, process_floor=0.001, logprob_tol=0.1)


def table(seed: int, rounds=10, stock=6, sigma=0.004, tau=0.001) -> np.ndarray:
    """[round, process] pass seconds: a common factor per round, a persistent offset per process, noise per pass."""
    rng = np.random.default_rng(seed)
    logs = rng.normal(0, 0.03, (rounds, 1)) + rng.normal(0, tau, stock) + rng.normal(0, sigma, (rounds, stock))
    return 1.3 * np.exp(logs)


def boot(x: np.ndarray) -> CalibrationRaw:
    names = [f"B{j + 1}" for j in range(x.shape[1])]
    return CalibrationRaw(
        started="2026-12-05T00:00:00+00:00",
        device="synthetic",
        engine=EngineSpec(kind="sglang", preset="qwen2-0.5b", dtype="bf16", device="cuda"),
        workload=make_workload("sglang", 151936, seed=1),
        stock=names,
        boot_s={n: 60.0 for n in names},
        sandboxed=True,
        rounds=[
            RawRound(t=9.0 * r, order=names, pass_s=dict(zip(names, map(float, row), strict=True)))
            for r, row in enumerate(x)
        ],
    )


def boots(far: float | None = None) -> list[CalibrationRaw]:
    """Twelve boots of six stock engines; with `far`, boot 5's B2 is that much slower in its last pass (as boot
    418549's was on the H200)."""
    xs = [table(s) for s in range(12)]
    if far is not None:
        xs[5][-1, 1] *= 1 + far
    return [boot(x) for x in xs]


def test_one_far_pass_moves_the_moment_fit_but_not_the_robust_one():
    clean, hit = fit(boots()), fit(boots(far=0.25))
    robust = fit(boots(far=0.25), CUT)
    assert hit.sigma > 2 * clean.sigma and hit.tau < clean.tau / 2  # the pass's square swamps the real offsets
    assert robust.sigma == pytest.approx(clean.sigma, rel=0.03) and robust.sigma == pytest.approx(0.004, rel=0.1)
    assert robust.tau == pytest.approx(clean.tau, abs=1e-4) and robust.tau == pytest.approx(0.001, rel=0.35)
    assert robust.tau_upper == pytest.approx(clean.tau_upper, abs=1e-4) and robust.cut == CUT
    assert robust.winsorized == 1
    assert np.max(np.abs(robust.resid)) > 0.2  # the simulation still resamples the far pass, as it was


def test_without_far_passes_the_robust_fit_is_the_moment_fit():
    moments, robust = fit(boots()), fit(boots(), CUT)
    assert robust.sigma == pytest.approx(moments.sigma, rel=0.01) and robust.tau == pytest.approx(moments.tau, rel=0.05)
    assert robust.tau_upper == pytest.approx(moments.tau_upper, rel=0.05) and robust.winsorized <= 1
    assert moments.cut is None and moments.winsorized == 0


def test_winsorize_pulls_in_only_the_far_pass_and_leaves_its_round_and_process_alone():
    z = np.log(table(3))
    z[4, 2] += 0.2
    y, n = winsorize(z)
    changed = np.argwhere(~np.isclose(y, z, rtol=0, atol=1e-15))
    assert n == 1 and changed.tolist() == [[4, 2]]  # a least-squares fit would have pushed its row and column out too
    assert 0.005 < z[4, 2] - y[4, 2] < 0.2
    assert winsorize(z, cut=50.0)[1] == 0 and winsorize(np.zeros((5, 3)))[1] == 0  # no scale: nothing is far


def test_the_record_carries_both_models_and_the_committed_one_reproduces():
    prereg = Preregistration(fixed="2026-12-05", rule=RULE, selected_on=[], why="a test")
    rec = analyse(boots(far=0.25), prereg, sims=40)
    assert isinstance(rec.robust_model, RobustModel) and type(rec.model) is not RobustModel
    assert rec.robust_model.sigma < rec.model.sigma / 2 and rec.robust_model.winsorized >= 1
    assert rec.robust_model.sims == 40 and rec.robust_model.method.startswith(
        "method of moments on each boot's table winsorized at 3.5 robust s.d."
    )
    done = CalibrationRecord.model_validate_json((DOCS / "calibration-h200.json").read_bytes())
    again = fit([load_raw(DOCS.parent / s) for s in done.sources], done.robust_model.cut)
    m = done.robust_model
    assert (m.sigma, m.tau, m.tau_upper_95, m.winsorized) == (again.sigma, again.tau, again.tau_upper, again.winsorized)
    assert m.sigma < done.model.sigma  # the H200's 24% pass is not in the robust sigma
