"""Calibration files read back as untrusted input: raw collections, pre-registrations, records and kept outputs that
cannot be trusted are refused in one line naming the first problem (hotfloat.qualify.calibrate.files)."""

import json
import os

import pytest

from calibration_boots import PREREG, raw

from hotfloat.qualify.calibrate.analyse import analyse


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
    from hotfloat.qualify.calibration import read_calibration

    record = tmp_path / "cal.json"
    record.write_text(
        analyse([raw(n=12)], PREREG, sims=0).model_dump_json().replace('"look_rounds":10', '"look_rounds":0')
    )
    with pytest.raises(InputError, match=r"not a calibration record: .*look_rounds: Input should be greater"):
        read_calibration(record)
