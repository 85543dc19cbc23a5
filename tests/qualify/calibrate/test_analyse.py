"""Calibration: the analysis on synthetic boots with known noise (independent units and their exact bound, k > 0
included; positive controls from handicapped engines; the process model; the secondary figures), the committed
record reproduced from its raw files, and raw files, records and kept outputs refused when they cannot be trusted."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from hotfloat.qualify.calibrate.files import (
    CalibrationRaw,
    CalibrationRecord,
    Preregistration,
    RawRound,
    clopper_pearson_upper,
    load_preregistration,
    load_raw,
)
from hotfloat.qualify.calibrate.analyse import analyse, assignments, units, walk
from hotfloat.qualify.calibrate.model import fit, simulate
from hotfloat.qualify.calibrate.noise import noise
from hotfloat.qualify.records import EngineSpec, RuleConfig
from hotfloat.qualify.workload import make_workload

DOCS = Path(__file__).resolve().parents[3] / "docs"
RULE = RuleConfig(look_rounds=10, max_looks=4, process_floor=0.001, logprob_tol=0.1)
PREREG = Preregistration(fixed="2026-12-04", rule=RULE, selected_on=["seen.raw.json"], why="a test")


def raw(n=60, sigma=0.003, tau=0.0005, seed=0, stock=3, scale=None, handicap=None) -> CalibrationRaw:
    """Rounds of `stock` stock engines (and handicapped ones, name -> effect) with a common factor per round, a
    persistent offset per process (s.d. tau) and per-pass noise (s.d. sigma); `scale` multiplies named engines."""
    rng = np.random.default_rng(seed)
    handicap = handicap or {}
    names = [f"B{i + 1}" for i in range(stock)] + list(handicap)
    factor = {k: np.exp(rng.normal(0, tau)) / (1 - handicap.get(k, 0.0)) * (scale or {}).get(k, 1.0) for k in names}
    rounds = []
    for r in range(n):
        common = np.exp(rng.normal(0, 0.03))
        rounds.append(
            RawRound(
                t=1.6 * r,
                order=[names[k] for k in rng.permutation(len(names))],
                agree={k: 1.0 for k in names},
                pass_s={k: 0.5 * common * factor[k] * float(np.exp(rng.normal(0, sigma))) for k in names},
            )
        )
    return CalibrationRaw(
        started="2026-12-03T00:00:00+00:00",
        device="synthetic",
        engine=EngineSpec(kind="sglang", preset="qwen2-0.5b", dtype="bf16", device="cuda"),
        engine_info={"engine": "sglang"},
        workload=make_workload("sglang", 151936, seed=1),
        stock=names[:stock],
        handicap=handicap,
        handicap_us={k: 6.0 for k in handicap},
        boot_s={k: 60.0 for k in names},
        rounds=rounds,
        sandboxed=True,
    )


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
    printed = capsys.readouterr().out
    assert "null (independent)" in printed and "process model: sigma" in printed
    assert f"robust model: sigma {rec.robust_model.sigma:.2%}" in printed and "passes winsorized" in printed


def test_the_committed_record_reproduces_from_the_committed_raw_files_and_sets_the_cuda_default():
    """Every count in docs/calibration-h200.json comes back from its sources, its rule is the pre-registered one,
    and the library's CUDA default is that rule, read from the record the package ships (docs/ links to it)."""
    from hotfloat.qualify.options import default_rule, recorded_gpus

    rec = CalibrationRecord.model_validate_json((DOCS / "calibration-h200.json").read_bytes())
    prereg = load_preregistration(DOCS / "calibration-h200.preregistered.json")
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
    assert rec.rule == prereg.rule == default_rule("cuda", "NVIDIA H200")
    assert (DOCS / "calibration-h200.json").resolve() == recorded_gpus()["NVIDIA H200"].resolve()


def cli(capsys, tmp_path, *args):
    from hotfloat.cli.main import main

    prereg = tmp_path / "prereg.json"
    prereg.write_text(PREREG.model_dump_json())
    args = [a.replace("{prereg}", str(prereg)) for a in args]
    with pytest.raises(SystemExit) as e:
        main(["qualify", "calibrate", *args])
    return e.value.code, capsys.readouterr().err


def hostile(edit):
    data = json.loads(raw(n=12).model_dump_json())
    edit(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    "text,why",
    [
        (hostile(lambda d: d["rounds"][3]["pass_s"].pop("B3")), "round 3 has no pass time for ['B3']"),
        (
            hostile(lambda d: d["rounds"][0]["pass_s"].update(B1=float("nan"))),
            "rounds.0.pass_s.B1: Input should be a finite",
        ),
        (hostile(lambda d: d["rounds"][0]["pass_s"].update(B2=1e-300)), "rounds.0.pass_s.B2: Input should be greater"),
        (hostile(lambda d: d.update(stock=["B1", "B1", "B2"])), "engine names repeat"),
        (hostile(lambda d: d.update(boot_s={})), "boot_s lacks"),
        (hostile(lambda d: d.update(kept=["B9"])), "kept names engines that are not in the collection"),
        (hostile(lambda d: d.update(handicap={"H1": 0.02})), "handicap and handicap_us name different engines"),
        (
            hostile(lambda d: d.update(handicap={"H1": 0.7}, handicap_us={"H1": 1.0})),
            "handicap.H1: Input should be less",
        ),
        ("[1, 2]", "Input should be an object"),
    ],
)
def test_analyse_refuses_a_raw_file_the_analysis_could_not_index(tmp_path, capsys, text, why):
    src = tmp_path / "raw.json"
    src.write_text(text)
    code, err = cli(capsys, tmp_path, "analyse", str(src), "--preregistered", "{prereg}", "--sims", "0")
    assert code == 2 and err.startswith(f"error: {src}: not a raw calibration collection: ") and why in err, err
    assert err.count("\n") == 1


def test_raw_files_that_never_end_are_refused_without_reading_them(tmp_path, capsys):
    fifo = tmp_path / "raw.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        code, err = cli(capsys, tmp_path, "analyse", str(path), "--preregistered", "{prereg}")
        assert (code, err) == (2, f"error: {path}: not a raw calibration collection: not a regular file\n")


def test_analyse_out_where_it_cannot_be_written_is_one_error_line(tmp_path, capsys):
    src = tmp_path / "raw.json"
    src.write_text(raw(n=12).model_dump_json())
    code, err = cli(
        capsys,
        tmp_path,
        "analyse",
        str(src),
        "--preregistered",
        "{prereg}",
        "--sims",
        "0",
        "--out",
        str(tmp_path / "no" / "cal.json"),
    )
    assert code == 2 and err.startswith("error: cannot write ") and err.count("\n") == 1, err


def test_a_preregistration_that_is_not_one_is_refused(tmp_path, capsys):
    src, bad = tmp_path / "raw.json", tmp_path / "bad.json"
    src.write_text(raw(n=12).model_dump_json())
    bad.write_text(PREREG.model_dump_json().replace('"look_rounds":10', '"look_rounds":1'))
    code, err = cli(capsys, tmp_path, "analyse", str(src), "--preregistered", str(bad))
    assert code == 2 and "not a pre-registered rule: rule.look_rounds: Input should be greater" in err, err


def collection(tmp_path, outputs: bytes | None):
    """A raw file with a kept candidate C1 and its outputs file (`outputs` None: a symlink to /dev/zero)."""
    base = raw(n=12)
    rounds = [r.model_copy(update={"pass_s": {**r.pass_s, "C1": r.pass_s["B3"]}}) for r in base.rounds]
    src = tmp_path / "raw.json"
    src.write_text(
        base.model_copy(
            update={
                "rounds": rounds,
                "candidates": {"C1": "c" * 64},
                "kept": ["B1", "B2", "C1"],
                "boot_s": {**base.boot_s, "C1": 60.0},
            }
        ).model_dump_json()
    )
    kept = tmp_path / "raw.json.outputs.jsonl"
    if outputs is None:
        kept.symlink_to("/dev/zero")
    else:
        kept.write_bytes(outputs)
    record = tmp_path / "cal.json"
    record.write_text(analyse([raw(n=12)], PREREG, sims=0).model_dump_json())
    return src, record


@pytest.mark.parametrize(
    "outputs,why",
    [
        (None, "raw.json.outputs.jsonl: not a regular file"),
        (b'{"round": 0, "engine": "B1"}\nnot json\n', "outputs.jsonl line 1: latency_s"),
        (b"\xff\n", "codec can't decode"),
    ],
)
def test_evidence_refuses_hostile_kept_outputs(tmp_path, capsys, outputs, why):
    src, record = collection(tmp_path, outputs)
    code, err = cli(
        capsys,
        tmp_path,
        "evidence",
        str(src),
        "--candidate",
        "C1",
        "--rule-from",
        str(record),
        "--out",
        str(tmp_path / "ev.json"),
    )
    assert code == 2 and err.startswith("error: cannot form evidence for C1: ") and why in err, err
    assert err.count("\n") == 1


def test_a_record_that_is_not_one_names_its_first_problem(tmp_path):
    from hotfloat.errors import InputError
    from hotfloat.qualify.calibrate.files import load_rule

    record = tmp_path / "cal.json"
    record.write_text(
        analyse([raw(n=12)], PREREG, sims=0).model_dump_json().replace('"look_rounds":10', '"look_rounds":0')
    )
    with pytest.raises(InputError, match=r"not a calibration record: .*look_rounds: Input should be greater"):
        load_rule(record)
