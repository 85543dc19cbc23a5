"""Calibration: the analysis on synthetic boots with known noise (independent units and their exact bound, k > 0
included; positive controls from handicapped engines; the process model; the secondary figures), the committed
record reproduced from its raw files (hostile files are test_files.py's)."""

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from hotfloat.qualify.calibrate.files import (
    CalibrationRecord,
    clopper_pearson_upper,
    load_preregistration,
    load_raw,
)
from hotfloat.qualify.calibrate.analyse import analyse, assignments, units, walk
from hotfloat.qualify.calibrate.model import fit, simulate
from hotfloat.qualify.calibrate.noise import noise
from calibration_boots import PREREG, RULE, raw

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_independent_units_count_the_false_passes_and_bound_exactly_those():
    """Eight boots of three stock engines; in two of them the engine playing C is 3% faster: 2 PASSes in 8
    independent units, and the bound is Clopper-Pearson of (2, 8) = 0.600, not of a rate rounded from pooled draws."""
    raws = [raw(seed=s, scale={"B2": 0.97} if s in (1, 4) else None) for s in range(8)]
    rec = analyse(raws, PREREG, sims=0, sources=[f"r{s}.raw.json" for s in range(8)])
    assert (rec.independent_draws, rec.false_passes_independent) == (8, 2)
    assert rec.false_pass_upper_95 == pytest.approx(0.6003, abs=1e-3) == clopper_pearson_upper(2, 8)
    assert [u.status for u in rec.units] == ["PASS" if s in (1, 4) else "FAIL" for s in range(8)]
    assert rec.held_out_draws == 8 and rec.held_out_false_passes == 2  # none of them was seen by the pre-registration
    assert rec.pooled_draws > 8 and rec.pooled_false_passes >= 2 and not rec.meets_targets
    assert any("2 of 8 independent" in s for s in rec.shortfall) and any(
        "positive controls" in s for s in rec.shortfall
    )
    doc = json.loads(rec.model_dump_json())
    doc["false_pass_upper_95"] = clopper_pearson_upper(0, 8)
    with pytest.raises(ValidationError, match="not the Clopper-Pearson bound"):
        CalibrationRecord.model_validate(doc)


def test_raw_files_of_two_engine_configurations_make_no_record():
    """A bound measured on SGLang's triton attention says nothing of its FlashInfer one: mixing them is refused."""
    info = {"attention_backend": "triton", "sampling_backend": "pytorch"}
    raws = [raw(seed=s).model_copy(update={"engine_info": info}) for s in range(3)]
    raws[2] = raws[2].model_copy(update={"engine_info": {**info, "attention_backend": "flashinfer"}})
    with pytest.raises(
        ValueError,
        match="c.raw.json ran another engine configuration than a.raw.json "
        r"\(attention_backend differ\)",
    ):
        analyse(raws, PREREG, sims=0, sources=["a.raw.json", "b.raw.json", "c.raw.json"])
    assert analyse(raws[:2], PREREG, sims=0).independent_draws == 2


def test_a_boot_of_six_is_two_disjoint_triples_and_handicapped_pairs_are_positive_controls():
    six = units(raw(stock=6), RULE, 0)
    assert [(u.kind, u.engines) for u in six] == [("null", ["B1", "B2", "B3"]), ("null", ["B4", "B5", "B6"])]
    mixed = raw(stock=4, handicap={"H1": 0.02, "H2": 0.02}, seed=3)
    got = units(mixed, RULE, 0)
    assert [(u.kind, u.engines, u.effect) for u in got] == [
        ("null", ["B1", "B2", "B3"], 0.0),
        ("positive", ["H1", "B4", "H2"], 0.02),
    ]
    rec = analyse([mixed, raw(stock=4, handicap={"H1": 0.02, "H2": 0.02}, seed=4)], PREREG, sims=0)
    [pc] = rec.positive_control
    assert (pc.effect, pc.qualifications, pc.passes) == (0.02, 2, 2) and pc.realised_effect == pytest.approx(
        0.02, abs=0.002
    )
    assert rec.independent_draws == 2 and rec.minutes_per_qualification == pytest.approx(
        (60 + pc.mean_rounds * 3 * 1.6 / 6) / 60
    )
    assert rec.model.processes == 8  # stock engines only: a handicapped process is not a draw of the stock offset
    two = raw(stock=2, handicap={"H1": 0.02, "H2": 0.02, "H3": 0.02, "H4": 0.02}, seed=5)  # a wave of controls only
    assert [(u.kind, u.engines) for u in units(two, RULE, 0)] == [
        ("positive", ["H1", "B1", "H2"]),
        ("positive", ["H3", "B2", "H4"]),
    ]
    assert analyse([two, mixed], PREREG, sims=0).positive_control[0].qualifications == 3


def test_the_process_model_recovers_the_noise_it_was_made_with():
    f = fit([raw(stock=6, sigma=0.004, tau=0.003, seed=s) for s in range(12)])
    resid = f.resid
    assert f.sigma == pytest.approx(0.004, rel=0.1) and f.tau == pytest.approx(0.003, rel=0.35) and f.tau_upper > f.tau
    assert (f.processes, f.passes) == (72, 72 * 60) and np.std(resid) == pytest.approx(0.004, rel=0.1)
    f0 = fit([raw(stock=6, sigma=0.004, tau=0.0, seed=s) for s in range(12)])
    assert f0.tau < 0.0006 and f0.tau_upper < 0.001
    rng = np.random.default_rng(0)
    assert simulate(resid, 0.0, RULE, 0.0, 300, rng) < 0.02 and simulate(resid, 0.0, RULE, 0.03, 100, rng) > 0.9
    assert simulate(resid, 0.02, RULE, 0.0, 300, rng) > 0.05  # offsets far above the floor: the rule is fooled


def test_walk_and_assignments_form_the_pooled_draws():
    x = np.array([[r.pass_s[k] for k in ("B1", "B2", "B3")] for r in raw(n=100).rounds])
    got = walk(x[:, 0], x[:, 1], x[:, 2], RULE)
    assert sum(k for _, k in got) <= 100 and all(k % 10 == 0 for _, k in got) and len(got) >= 2
    assert len(assignments(["B1", "B2", "B3"])) == 3 and len(assignments(["a", "b", "c", "d"])) == 12
    assert clopper_pearson_upper(0, 298) == pytest.approx(1 - 0.05 ** (1 / 298), rel=1e-3)
    assert clopper_pearson_upper(0, 0) == 1.0 and clopper_pearson_upper(2, 10) > 0.2


def test_noise_measures_the_carry_over_check_on_honest_engines_and_sees_a_cheat():
    """B3 leaves work behind that slows whichever engine is served next by 5%: only its carry-over stands out."""
    data = raw(n=200)
    for r in data.rounds:
        i = r.order.index("B3")
        if i + 1 < len(r.order):
            r.pass_s[r.order[i + 1]] *= 1.05
    nz = noise([data])
    assert nz["carry_after_B3"] == pytest.approx(0.05, abs=0.01) and nz["carry_after_B3_se"] < 0.005
    assert abs(nz["carry_after_B1"]) < 0.03 and abs(nz["carry_after_B2"]) < 0.03


def test_cli_analyse_writes_the_record_with_the_preregistered_rule(tmp_path, capsys):
    from hotfloat.cli.main import main

    src, prereg, out = tmp_path / "raw.json", tmp_path / "prereg.json", tmp_path / "cal.json"
    src.write_text(raw(n=30, stock=6).model_dump_json())
    prereg.write_text(PREREG.model_dump_json())
    with pytest.raises(SystemExit) as e:
        main(
            [
                "qualify",
                "calibrate",
                "analyse",
                str(src),
                "--preregistered",
                str(prereg),
                "--out",
                str(out),
                "--sims",
                "20",
            ]
        )
    assert e.value.code in (0, None)
    rec = CalibrationRecord.model_validate_json(out.read_text())
    assert (
        rec.independent_draws == 2 and rec.rule == RULE and rec.selection == "pre-registered" and rec.model.sims == 20
    )
    from hotfloat.env.source import source_digest

    assert rec.source == source_digest()  # the tree that analysed it, by content
    printed = capsys.readouterr().out
    assert "null (independent)" in printed and "process model: sigma" in printed
    assert f"robust model: sigma {rec.robust_model.sigma:.2%}" in printed and "passes winsorized" in printed


@pytest.mark.parametrize(
    "gpu, device, attention",
    [
        ("h200", "NVIDIA H200", "triton"),
        ("h100", "NVIDIA H100 80GB HBM3", "flashinfer"),
        ("h100-triton", "NVIDIA H100 80GB HBM3", "triton"),
    ],
)
def test_a_committed_record_reproduces_from_the_committed_raw_files_and_sets_its_gpus_cuda_default(
    gpu, device, attention
):
    """Every count in docs/calibration-<gpu>.json comes back from its sources, its rule is the pre-registered one,
    and the library's CUDA default on that GPU is that rule, read from the record the package ships (docs/ links to
    it)."""
    from hotfloat.qualify.options import default_rule, recorded_gpus

    rec = CalibrationRecord.model_validate_json((DOCS / f"calibration-{gpu}.json").read_bytes())
    prereg = load_preregistration(DOCS / f"calibration-{gpu.split('-')[0]}.preregistered.json")
    root = DOCS.parent
    again = analyse([load_raw(root / s) for s in rec.sources], prereg, sims=0, sources=rec.sources)
    keys = (
        "independent_draws",
        "false_passes_independent",
        "false_pass_upper_95",
        "held_out_draws",
        "pooled_draws",
        "pooled_false_passes",
        "units",
        "positive_control",
        "injected",
        "rounds",
    )
    assert {k: getattr(again, k) for k in keys} == {k: getattr(rec, k) for k in keys}
    assert (again.model.sigma, again.model.tau, again.model.tau_upper_95) == (
        rec.model.sigma,
        rec.model.tau,
        rec.model.tau_upper_95,
    )
    assert rec.device == device and rec.rule == prereg.rule == default_rule("cuda", device)
    assert rec.engine["attention_backend"] == attention
    assert (DOCS / f"calibration-{gpu}.json").resolve() == recorded_gpus()[device][attention].resolve()
