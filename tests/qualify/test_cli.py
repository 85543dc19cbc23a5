"""`hotfloat qualify BUNDLE`: JSON verdict, evidence file, exit codes, refused options."""

import json

import pytest

from hotfloat.cli.main import main


def run(capsys, *args):
    with pytest.raises(SystemExit) as e:
        main(["qualify", *args])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_broken_bundle_exit_1_with_evidence_that_recomputes(bundles, tmp_path, capsys):
    ev = tmp_path / "ev.json"
    code, out, _ = run(
        capsys,
        str(bundles["broken"]),
        "--device",
        "cpu",
        "--look-rounds",
        "3",
        "--max-looks",
        "1",
        "--seed",
        "4",
        "--evidence",
        str(ev),
        "--json",
    )
    verdict = json.loads(out)
    assert code == 1 and verdict["status"] == "FAIL" and verdict["score"] == 0 and verdict["decision"]["rounds"] == 0
    # every verdict names its calibration: on CPU, none, and why
    assert verdict["calibration"] == {"kind": "none", "why": "the CPU rule, never calibrated"}
    assert verdict["worth"] is None and verdict["caveat"] is None
    assert json.loads(ev.read_text())["calibration"] == verdict["calibration"]
    assert verdict["engine"] == json.loads(ev.read_text())["engine"] and verdict["engine"]["kind"] == "transformers"
    assert run(capsys, "recompute", str(ev))[0] == 0


def test_unknown_preset_is_bad_input(bundles, capsys):
    code, _, err = run(capsys, str(bundles["exact"]), "--preset", "nope")
    assert code == 2 and err.startswith("error: ") and "preset" in err


def test_not_a_bundle_is_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, str(tmp_path / "missing"))
    assert code == 2 and err.startswith("error: ")


def test_sglang_on_cpu_is_one_error_line(bundles, capsys):
    code, _, err = run(capsys, str(bundles["exact"]), "--device", "cpu", "--engine", "sglang")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "cuda" in err


def test_calibrate_evidence_refuses_a_file_that_is_not_a_calibration_record(tmp_path, capsys):
    raw, record = tmp_path / "raw.json", tmp_path / "record.json"
    raw.write_text("{}")
    record.write_text('{"rule": ' * 40 + "1" + "}" * 40)
    code, _, err = run(
        capsys,
        "calibrate",
        "evidence",
        str(raw),
        "--candidate",
        "C1",
        "--rule-from",
        str(record),
        "--out",
        str(tmp_path / "ev.json"),
    )
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "not a calibration record" in err, err


def test_rule_from_takes_the_records_timing_rule_under_the_flags_beside_it(bundles, tmp_path, capsys):
    """`qualify run --rule-from`: the record's timing fields, the flags given beside it winning, and never the
    record's correctness slacks (the committed record, from before the audit, says audit_slack 0)."""
    from pathlib import Path

    from hotfloat.qualify import QualifyOptions
    from hotfloat.qualify.options import recorded_gpus
    from hotfloat.qualify.calibration import read_calibration

    ev = tmp_path / "ev.json"
    code, out, _ = run(
        capsys,
        str(bundles["broken"]),
        "--device",
        "cpu",
        "--rule-from",
        str(recorded_gpus()["NVIDIA H200"]["triton"]),
        "--look-rounds",
        "3",
        "--max-looks",
        "1",
        "--seed",
        "4",
        "--evidence",
        str(ev),
        "--json",
    )
    assert code == 1 and json.loads(out)["status"] == "FAIL"
    rule, record = (
        json.loads(Path(ev).read_text())["rule"],
        read_calibration(recorded_gpus()["NVIDIA H200"]["triton"]).rule,
    )
    assert (rule["look_rounds"], rule["max_looks"]) == (3, 1)
    assert (rule["noise_floor"], rule["process_floor"], rule["carry_bound"]) == (
        record.noise_floor,
        record.process_floor,
        record.carry_bound,
    )
    cpu = QualifyOptions.for_device("cpu").rule
    assert (rule["gate_slack"], rule["audit_slack"]) == (cpu.gate_slack, cpu.audit_slack)
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    code, _, err = run(capsys, str(bundles["broken"]), "--device", "cpu", "--rule-from", str(bad))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_a_verdict_under_a_record_names_it_and_its_bound_and_recompute_holds_it_to_the_record(
    bundles, tmp_path, capsys
):
    """`--rule-from` a record of this very engine and rule (the CPU stand-in, two synthetic boots: it misses its
    targets): the table, the line under it and the evidence name the record, its digest and its bound; `recompute`
    checks the evidence's summary against the record by digest, says when the record is not at hand, and refuses a
    summary inflated to meet the targets in one line."""
    import hashlib

    import torch

    from hotfloat.qualify.calibrate.analyse import analyse
    from hotfloat.qualify.calibrate.files import Preregistration, clopper_pearson_upper
    from hotfloat.qualify.options import CPU_RULE
    from hotfloat.qualify.records import RuleConfig

    from .calibrate.calibration_boots import raw

    info = {"engine": "transformers", "torch": torch.__version__, "decode": "eager"}
    prereg = Preregistration(fixed="2026-12-06", rule=RuleConfig(**CPU_RULE), selected_on=[], why="a test")
    boots = [raw(n=12, seed=s).model_copy(update={"engine_info": info}) for s in (1, 2)]
    record, ev = tmp_path / "cpu-record.json", tmp_path / "ev.json"
    record.write_text(analyse(boots, prereg, sims=0).model_dump_json())
    args = ("--device", "cpu", "--rule-from", str(record), "--seed", "4", "--evidence", str(ev))
    code, out, _ = run(capsys, str(bundles["broken"]), *args)
    digest = hashlib.sha256(record.read_bytes()).hexdigest()
    assert code == 1 and "calibration=cpu-record.json" in out
    assert (
        f"calibration: cpu-record.json (sha256 {digest[:12]}, synthetic): 2 independent null units, 0 false PASS, "
        "false PASS <= 77.6% (95%)" in out
    )
    assert "judged under cpu-record.json, which misses its targets (false PASS: 0 of 2 independent" in out
    named = json.loads(ev.read_text())["calibration"]
    assert (named["kind"], named["record"], named["sha256"], named["units"]) == ("record", "cpu-record.json", digest, 2)

    code, out, _ = run(capsys, "recompute", str(ev), "--record", str(record), "--json")
    assert code == 0 and json.loads(out)["calibration_checked"] is True
    code, out, _ = run(capsys, "recompute", str(ev))
    assert code == 0 and "calibration NOT checked: the record it names is not at hand" in out
    data = json.loads(ev.read_text())
    data["calibration"].update(units=300, false_pass_upper_95=clopper_pearson_upper(0, 300), meets_targets=True)
    data["calibration"]["shortfall"] = []
    ev.write_text(json.dumps(data))
    code, _, err = run(capsys, "recompute", str(ev), "--record", str(record))
    assert code == 2 and err.count("\n") == 1 and "is not what cpu-record.json says for its rule and engine" in err


def test_a_pass_under_a_record_that_misses_its_targets_is_visibly_provisional(tmp_path, capsys):
    """A PASS (the rule's own: C 10% faster in every round) on the engine and under the rule of the H100 record the
    first win ran under, which misses its targets: `recompute` checks it against that record and its table and JSON
    call it provisional, not a full PASS; under no record at all a PASS is provisional too."""
    from pathlib import Path

    from hotfloat.qualify import save_evidence
    from hotfloat.qualify.calibration import describe, read_calibration
    from hotfloat.qualify.decision import judge

    from .test_evidence import synthetic

    path_h100 = Path(__file__).parent / "calibration-h100-session29.json"  # the record the first win ran under
    h100 = read_calibration(path_h100)
    ev = synthetic(rounds=10)
    for file, says in (
        (None, "provisional PASS: no calibration record backs it (a rule given by hand, never calibrated)"),
        (h100, f"provisional PASS, not a full one: {h100.name} misses its targets (false PASS: 0 of 2"),
    ):
        rule = h100.rule
        decided = ev.model_copy(
            update={
                "rule": rule,
                "engine_info": h100.record.engine,
                "decision": judge(ev.frames, rule, ev.order),
                "calibration": describe(file, rule, h100.record.engine, "cuda"),
            }
        )
        assert decided.decision.status == "PASS"
        save_evidence(decided, tmp_path / "pass.json")
        code, out, _ = run(capsys, "recompute", str(tmp_path / "pass.json"), "--record", str(path_h100), "--json")
        got = json.loads(out)
        assert code == 0 and got["worth"] == "provisional" and got["caveat"].startswith(says)
        assert got["calibration_checked"] is True
        code, out, _ = run(capsys, "recompute", str(tmp_path / "pass.json"))
        assert code == 0 and says[:60] in out


def test_a_cpu_decision_at_80_columns_shows_every_number_whole_and_says_a_cpu_cannot_show_speed(
    bundles, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, str(bundles["exact"]), "--device", "cpu", "--look-rounds", "3", "--max-looks", "1")
    lines = out.splitlines()
    assert code in (0, 1, 5) and max(map(len, lines)) <= 80 and "…" not in out, out
    flat = " ".join(" ".join(lines).split())
    assert "reason: " in flat and "note: on a CPU, Triton kernels run in Triton's interpreter" in flat
    assert "a FAIL for speed here says nothing of a GPU" in flat
