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
    code, out, _ = run(capsys, str(bundles["broken"]), "--device", "cpu", "--look-rounds", "3", "--max-looks", "1",
                       "--seed", "4", "--evidence", str(ev), "--json")
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
    code, _, err = run(capsys, "calibrate", "evidence", str(raw), "--candidate", "C1", "--rule-from", str(record),
                       "--out", str(tmp_path / "ev.json"))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "not a calibration record" in err, err
