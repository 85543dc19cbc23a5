"""Calibration: the analysis on synthetic raw rounds with known noise (false PASS, injected power, the chosen rule,
the record's fields), the CLI on a raw file, and a short real collection on the tiny CPU engines."""

import json
import os

import numpy as np
import pytest

from hotfloat.qualify.calibrate import (CalibrationRaw, RawRound, analyse, assignments, clopper_pearson_upper,
                                        default_grid, noise, walk)
from hotfloat.qualify.records import EngineSpec, RuleConfig
from hotfloat.qualify.workload import make_workload


def raw(n=400, sigma=0.003, tau=0.0005, seed=0) -> CalibrationRaw:
    rng = np.random.default_rng(seed)
    names = ["B1", "B2", "B3"]
    offsets = dict(zip(names, np.exp(rng.normal(0, tau, 3))))
    rounds = []
    for r in range(n):
        common = np.exp(rng.normal(0, 0.03))
        order = [names[k] for k in rng.permutation(3)]
        rounds.append(RawRound(t=1.6 * r, order=order, agree={k: 1.0 for k in names},
                               pass_s={k: 0.5 * common * offsets[k] * float(np.exp(rng.normal(0, sigma))) for k in names}))
    return CalibrationRaw(started="2026-12-03T00:00:00+00:00", device="synthetic",
                          engine=EngineSpec(kind="sglang", preset="qwen2-0.5b", dtype="bf16", device="cuda"),
                          engine_info={"engine": "sglang"}, workload=make_workload("sglang", 151936, seed=1),
                          stock=names, boot_s={k: 60.0 for k in names}, rounds=rounds, sandboxed=True)


GRID = [RuleConfig(look_rounds=10, max_looks=4, process_floor=0.001, logprob_tol=0.1),
        RuleConfig(look_rounds=10, max_looks=4, process_floor=0.03, logprob_tol=0.1)]


def test_analysis_measures_false_pass_and_power_and_picks_the_powerful_rule():
    rec = analyse([raw()], GRID, boot_draws=200)
    assert rec.false_pass_rate <= 0.01 and rec.bootstrap_false_pass <= 0.02
    assert rec.power_at_5pct == 1.0 and rec.power_at_2pct >= 0.9 and rec.power_at_1pct < rec.power_at_5pct
    assert rec.rule.process_floor == 0.001  # the 3% floor cannot see 2%
    assert not rec.meets_targets  # 400 rounds make fewer than 200 draws
    assert rec.candidates[1].rows[2].pass_rate < 0.5
    assert rec.independent_draws >= 10 and rec.draws_b_vs_b >= 3 * 10  # three choices of the engine playing C
    assert 0 < rec.false_pass_upper_95 < 0.3 and 1.0 < rec.minutes_per_qualification < 2.0
    assert rec.noise["pass_cv_B1"] > 0 and abs(rec.noise["ln_B2_over_B1_median"]) < 0.01


def test_among_equally_powerful_rules_the_larger_process_floor_is_chosen():
    """One look of 10 rounds: every decision takes the same rounds, so power (100%) and null draws (40) tie and the
    floor decides: a larger floor bounds the process offsets the rounds cannot average."""
    grid = [RuleConfig(look_rounds=10, max_looks=1, process_floor=pf, logprob_tol=0.1) for pf in (0.001, 0.002)]
    rec = analyse([raw()], grid, boot_draws=0)
    rows = [c.rows for c in rec.candidates]
    assert rows[0][2].pass_rate == rows[1][2].pass_rate == 1.0 and rows[0][0].draws == rows[1][0].draws
    assert rec.rule.process_floor == 0.002 and not rec.meets_targets


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
    assert abs(noise([raw(n=200)])["carry_after_B3"]) < 3 * noise([raw(n=200)])["carry_after_B3_se"]


def test_walk_forms_back_to_back_disjoint_decisions():
    x = np.array([[r.pass_s[k] for k in ("B1", "B2", "B3")] for r in raw(n=100).rounds])
    got = walk(x[:, 0], x[:, 1], x[:, 2], GRID[0])
    assert sum(k for _, k in got) <= 100 and all(k % 10 == 0 for _, k in got) and len(got) >= 2


def test_assignments_and_the_confidence_bound():
    assert len(assignments(["B1", "B2", "B3"])) == 3 and len(assignments(["a", "b", "c", "d"])) == 12
    assert clopper_pearson_upper(0, 298) == pytest.approx(1 - 0.05 ** (1 / 298), rel=1e-3)
    assert clopper_pearson_upper(0, 0) == 1.0 and clopper_pearson_upper(2, 10) > 0.2
    assert len(default_grid(0.1)) == 36


def test_cli_analyse_writes_the_record_and_refuses_bad_input(tmp_path, capsys):
    from hotfloat.cli.main import main

    src = tmp_path / "raw.json"
    src.write_text(raw(n=120).model_dump_json())
    out = tmp_path / "cal.json"
    with pytest.raises(SystemExit) as e:
        main(["qualify", "calibrate", "analyse", str(src), "--out", str(out), "--boot-draws", "50"])
    assert e.value.code in (0, None)
    rec = json.loads(out.read_text())
    for key in ("device", "engine", "draws_b_vs_b", "false_pass_rate", "false_pass_upper_95", "power_at_1pct",
                "power_at_2pct", "power_at_5pct", "minutes_per_qualification", "rule", "command"):
        assert key in rec
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "nope"}')
    with pytest.raises(SystemExit) as e:
        main(["qualify", "calibrate", "analyse", str(bad)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1


def cli(capsys, *args):
    from hotfloat.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["qualify", "calibrate", *args])
    return e.value.code, capsys.readouterr().err


def hostile(edit):
    data = json.loads(raw(n=12).model_dump_json())
    edit(data)
    return json.dumps(data)


@pytest.mark.parametrize("text,why", [
    (hostile(lambda d: d["rounds"][3]["pass_s"].pop("B3")), "round 3 has no pass time for ['B3']"),
    (hostile(lambda d: d["rounds"][0]["pass_s"].update(B1=float("nan"))), "rounds.0.pass_s.B1: Input should be a finite"),
    (hostile(lambda d: d["rounds"][0]["pass_s"].update(B2=1e-300)), "rounds.0.pass_s.B2: Input should be greater"),
    (hostile(lambda d: d.update(stock=["B1", "B1", "B2"])), "engine names repeat"),
    (hostile(lambda d: d.update(boot_s={})), "boot_s lacks"),
    (hostile(lambda d: d.update(kept=["B9"])), "kept names engines that are not in the collection"),
    ("[1, 2]", "Input should be an object"),
])
def test_analyse_refuses_a_raw_file_the_analysis_could_not_index(tmp_path, capsys, text, why):
    src = tmp_path / "raw.json"
    src.write_text(text)
    code, err = cli(capsys, "analyse", str(src), "--boot-draws", "0")
    assert code == 2 and err.startswith(f"error: {src}: not a raw calibration collection: ") and why in err, err
    assert err.count("\n") == 1


def test_raw_files_that_never_end_are_refused_without_reading_them(tmp_path, capsys):
    fifo = tmp_path / "raw.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        code, err = cli(capsys, "analyse", str(path))
        assert (code, err) == (2, f"error: {path}: not a raw calibration collection: not a regular file\n")


def test_analyse_out_where_it_cannot_be_written_is_one_error_line(tmp_path, capsys):
    src = tmp_path / "raw.json"
    src.write_text(raw(n=12).model_dump_json())
    code, err = cli(capsys, "analyse", str(src), "--boot-draws", "0", "--out", str(tmp_path / "no" / "cal.json"))
    assert code == 2 and err.startswith("error: cannot write ") and err.count("\n") == 1, err


def collection(tmp_path, outputs: bytes | None):
    """A raw file with a kept candidate C1 and its outputs file (`outputs` None: a symlink to /dev/zero)."""
    base = raw(n=12)
    rounds = [r.model_copy(update={"pass_s": {**r.pass_s, "C1": r.pass_s["B3"]}}) for r in base.rounds]
    src = tmp_path / "raw.json"
    src.write_text(base.model_copy(update={"rounds": rounds, "candidates": {"C1": "c" * 64}, "kept": ["B1", "B2", "C1"],
                                           "boot_s": {**base.boot_s, "C1": 60.0}}).model_dump_json())
    kept = tmp_path / "raw.json.outputs.jsonl"
    if outputs is None:
        kept.symlink_to("/dev/zero")
    else:
        kept.write_bytes(outputs)
    record = tmp_path / "cal.json"
    record.write_text(analyse([raw(n=12)], GRID[:1], boot_draws=0).model_dump_json())
    return src, record


@pytest.mark.parametrize("outputs,why", [(None, "raw.json.outputs.jsonl: not a regular file"),
                                         (b'{"round": 0, "engine": "B1"}\nnot json\n', "outputs.jsonl line 1: latency_s"),
                                         (b"\xff\n", "codec can't decode")])
def test_evidence_refuses_hostile_kept_outputs(tmp_path, capsys, outputs, why):
    src, record = collection(tmp_path, outputs)
    code, err = cli(capsys, "evidence", str(src), "--candidate", "C1", "--rule-from", str(record),
                    "--out", str(tmp_path / "ev.json"))
    assert code == 2 and err.startswith("error: cannot form evidence for C1: ") and why in err, err
    assert err.count("\n") == 1


def test_a_record_that_is_not_one_names_its_first_problem(tmp_path):
    from hotfloat.errors import InputError
    from hotfloat.qualify.calibrate import load_rule

    record = tmp_path / "cal.json"
    record.write_text(analyse([raw(n=12)], GRID[:1], boot_draws=0).model_dump_json().replace('"look_rounds":10', '"look_rounds":0'))
    with pytest.raises(InputError, match=r"not a calibration record: rule.look_rounds: Input should be greater"):
        load_rule(record)


def test_a_short_real_collection_on_cpu_and_evidence_formed_from_it(tmp_path, bundles):
    """Three stock engines, a broken candidate and one that raises: rounds are written as they go, stock engines agree
    exactly, the raising candidate leaves the collection (recorded) without ending it, and the kept completions make
    a qualification whose gate fails the broken candidate and which recomputes."""
    from hotfloat.qualify import QualifyOptions, recompute
    from hotfloat.qualify.calibrate import collect, evidence_from, load_raw

    out = tmp_path / "raw.json"
    got = collect(QualifyOptions.for_device("cpu", seed=2, warmup_passes=0), out, stock=3,
                  candidates={"C1": bundles["broken"], "C2": bundles["raises"]}, keep_rounds=3, budget_s=90)
    back = load_raw(out)
    assert back == got and len(got.rounds) >= 3 and got.stock == ["B1", "B2", "B3"] and list(got.candidates) == ["C1"]
    assert "C2" in got.failed and "ZeroDivisionError" in got.failed["C2"] and "C2" not in got.kept
    assert all(sorted(r.order) == ["B1", "B2", "B3", "C1"] and all(v > 0 for v in r.pass_s.values()) for r in got.rounds)
    assert all(r.agree["B2"] == 1.0 and r.agree["B3"] == 1.0 for r in got.rounds)  # stock engines agree exactly
    # every pass carries the host's readings; a CPU engine's pass is its tree's own CPU work, so it used CPU time
    assert all(r.host.keys() == r.pass_s.keys() and all(h["cpu_s"] > 0 and h["steal_s"] >= 0 for h in r.host.values())
               for r in got.rounds)
    assert sum(got.routed["C1"].values()) > 0 and not sum(got.routed["B1"].values())
    ev = evidence_from(got, tmp_path / "raw.json.outputs.jsonl", "C1", RuleConfig(look_rounds=3, max_looks=2, logprob_tol=1e-3))
    assert ev.rule.max_looks == 1 and [f.role for f in ev.frames] == ["B", "C", "B"] and len(ev.frames[1].pass_s) == 3
    assert ev.decision.status == "FAIL" and "does not match" in ev.decision.reason and recompute(ev) == ev.decision
    with pytest.raises(ValueError, match="kept"):
        evidence_from(got, tmp_path / "raw.json.outputs.jsonl", "B3", RuleConfig(look_rounds=3))


def test_pooled_raw_files_keep_their_engines_apart_and_time_the_slowest_boot_and_rounds():
    slow = raw(n=200, seed=1)
    slow = slow.model_copy(update={"boot_s": {k: 120.0 for k in slow.stock},
                                   "rounds": [r.model_copy(update={"t": 2 * r.t}) for r in slow.rounds]})
    rec = analyse([slow, raw(n=200, seed=2)], GRID[:1], boot_draws=0)
    assert rec.noise["boot_s_max"] == 120.0 and rec.noise["engine_round_s"] == pytest.approx(3.2 / 3)
    assert {"r0_pass_cv_B1", "r1_pass_cv_B1"} <= rec.noise.keys() and "pass_cv_B1" not in rec.noise
    rounds = rec.candidates[0].rows[2].mean_rounds
    assert rec.minutes_per_qualification == pytest.approx((120.0 + rounds * 3.2) / 60)
