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
    from hotfloat.qualify.calibrate.files import load_rule

    ev = tmp_path / "ev.json"
    code, out, _ = run(
        capsys,
        str(bundles["broken"]),
        "--device",
        "cpu",
        "--rule-from",
        str(recorded_gpus()["NVIDIA H200"]),
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
    rule, record = json.loads(Path(ev).read_text())["rule"], load_rule(recorded_gpus()["NVIDIA H200"])
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
