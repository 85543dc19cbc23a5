"""`hotfloat validator` and `hotfloat serve`: queue and status from the ledger, one error line for bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hotfloat.cli.main import main
from hotfloat.ledger import Ledger

from ..conftest import foreign_sqlite

GOOD = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""

GPU_ONLY = """\
bundle_id = "gpuonly"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
architectures = ["sm_90"]
"""


def hotfloat(capsys, *argv):
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_submit_then_status(capsys, make_bundle, tmp_path):
    db, bundle = str(tmp_path / "l.db"), str(make_bundle())
    code, out, _ = hotfloat(capsys, "validator", "submit", bundle, "--ledger", db, "--json")
    assert code == 0 and json.loads(out)[0]["state"] == "received" and json.loads(out)[0]["new"]
    (Path(bundle) / ".git").mkdir()
    (Path(bundle) / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    code, out, err = hotfloat(capsys, "validator", "submit", bundle, "--ledger", db, "--json")
    assert code == 0 and not json.loads(out)[0]["new"], "a VCS folder is not part of the bundle: same identity"
    assert f"note: ignored .git/ in {bundle}" in err
    code, out, _ = hotfloat(capsys, "validator", "status", "--ledger", db, "--json")
    status = json.loads(out)
    assert code == 0 and status["counts"]["received"] == 1 and status["submissions"][0]["bundle_id"] == "b"
    code, out, _ = hotfloat(capsys, "validator", "status", "--ledger", db)
    assert code == 0 and "received" in out and "State." not in out
    code, out, _ = hotfloat(capsys, "validator", "status", "1", "--ledger", db, "--json")
    assert code == 0 and [t["to_state"] for t in json.loads(out)["transitions"]] == ["received"]


@pytest.mark.parametrize(
    "argv, says",
    [
        (("validator", "status", "--ledger", "/nonexistent/l.db"), "no ledger here"),
        (("validator", "run", "--ledger", "{db}"), "either --spawn or both"),
        (("validator", "run", "--ledger", "{db}", "--spawn", "--netuid", "7"), "apply only with --chain"),
        (("validator", "run", "--ledger", "{db}", "--spawn", "--chain", "standin:{db}.json"), "--chain needs --netuid"),
        (("validator", "status", "7", "--ledger", "{db}"), "no submission 7"),
        (
            ("validator", "run", "--ledger", "{db}", "--compiler", "c", "--admission", "a", "--rule-from", "{db}"),
            "--rule-from applies only with --spawn",
        ),
        (("validator", "run", "--ledger", "{db}", "--spawn", "--rule-from", "{db}"), "not a calibration record"),
        (
            (
                "validator",
                "run",
                "--ledger",
                "{db}",
                "--compiler",
                "c",
                "--admission",
                "a",
                "--attention",
                "flashinfer",
            ),
            "--attention applies only with --spawn",
        ),
        (("serve", "compiler", "--socket", "{db}.sock", "--attention", "flashinfer"), "--attention applies only to"),
        (("serve", "compiler"), "exactly one of --socket"),
        (("serve", "compiler", "--listen", "0.0.0.0:7000", "--token-file", "{token}"), "needs mutual TLS"),
        (
            (
                "validator",
                "run",
                "--ledger",
                "{db}",
                "--compiler",
                "10.1.2.3:50051",
                "--admission",
                "a.sock",
                "--token-file",
                "{token}",
            ),
            "needs mutual TLS",
        ),
        (("validator", "run", "--ledger", "{db}", "--spawn", "--tls-ca", "{token}"), "mutual TLS needs all"),
        (
            (
                "validator",
                "run",
                "--ledger",
                "{db}",
                "--compiler",
                "c.sock",
                "--admission",
                "a.sock",
                "--qualification",
                "q.sock",
                "--qualification",
                "q.sock",
                "--token-file",
                "{token}",
            ),
            "each once",
        ),
        (("serve", "compiler", "--socket", "{db}.sock"), "deployment token"),
        (("serve", "compiler", "--socket", "{db}.sock", "--rule-from", "{db}"), "applies only to the qualification"),
        (("serve", "qualification", "--socket", "{db}.sock", "--rule-from", "{db}"), "not a calibration record"),
    ],
)
def test_bad_input_is_one_error_line_exit_2(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.delenv("HOTFLOAT_TOKEN", raising=False)
    db, token = tmp_path / "l.db", tmp_path / "token"
    token.write_text("t" * 32)
    Ledger(db).close()
    code, _, err = hotfloat(capsys, *(a.format(db=db, token=token) for a in argv))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and says in err, err


def test_an_archive_that_never_ends_is_refused_without_reading_it(capsys, tmp_path):
    fifo = tmp_path / "b.tar.gz"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        code, _, err = hotfloat(capsys, "validator", "submit", str(path), "--ledger", str(tmp_path / "l.db"))
        assert (code, err) == (2, f"error: {path}: no such bundle directory or archive\n")


def test_status_of_a_database_that_is_not_a_ledger_is_one_line_and_leaves_it_alone(capsys, tmp_path):
    path = tmp_path / "other.db"
    before = foreign_sqlite(path, "foo")
    code, _, err = hotfloat(capsys, "validator", "status", "--ledger", str(path))
    assert (
        code == 3 and err == f"error: ledger {path}: an SQLite database of another program (tables foo), not a ledger\n"
    )
    assert path.read_bytes() == before


def test_a_submission_id_beyond_sqlite_integers_is_a_usage_error(capsys, tmp_path):
    Ledger(tmp_path / "l.db").close()
    code, _, err = hotfloat(capsys, "validator", "status", str(1 << 70), "--ledger", str(tmp_path / "l.db"))
    assert code == 2 and "is not in the range" in err and "internal" not in err


def test_bad_bundle_submission_is_refused(capsys, make_bundle, tmp_path):
    root = make_bundle(files={"kernels/lib.so": b"\x7fELF"})
    code, _, err = hotfloat(capsys, "validator", "submit", str(root), "--ledger", str(tmp_path / "l.db"))
    assert code == 2 and err.startswith("error: ") and "compiled files are refused" in err


def test_run_spawns_separate_service_processes(capsys, make_bundle, tmp_path):
    """Compile refuses one bundle; admission, in its own process, finds no op of the other runs on CPU."""
    db = str(tmp_path / "l.db")
    banned = make_bundle("import socket\n\ndef run(x, out):\n    out.zero_()\n", name="banned")
    gpu_only = make_bundle(GOOD, name="gpuonly", manifest=GPU_ONLY)
    hotfloat(capsys, "validator", "submit", str(banned), str(gpu_only), "--ledger", db)
    code, out, err = hotfloat(capsys, "validator", "run", "--spawn", "--ledger", db, "--json")
    assert code == 0, err
    assert json.loads(out)["counts"]["failed"] == 1 and json.loads(out)["counts"]["no_decision"] == 1
    assert "#1 scan: failed: scan:" in err and "#2 admit: no_decision: admit: no op of the bundle applies on cpu" in err
    assert "note: submissions stop at admitted: no qualification service to time a candidate: give --rule-from" in err
    assert json.loads(out)["through"] == "admitted" and "--rule-from" in json.loads(out)["stopped"]


def test_the_committed_calibration_record_gives_serve_its_rule():
    from hotfloat.qualify.calibrate.files import CalibrationRecord
    from hotfloat.qualify.calibration import read_calibration

    record = Path(__file__).resolve().parents[2] / "docs" / "calibration-h200.json"
    rule = read_calibration(record).rule
    assert rule == CalibrationRecord.model_validate_json(record.read_bytes()).rule
    assert rule.look_rounds == 5  # the rule the H200 collection chose, not the library default


def test_status_names_each_verdicts_calibration_and_what_its_pass_is_worth(
    capsys, make_bundle, qualified_record, tmp_path
):
    """Submissions settled through the pipeline: one under the committed H200 record (three runs, combined bound
    0.23%: full, crowned), one under the H100 record (two runs, 60.3%: provisional, held from the crown); one still
    qualified names its first run's record and bound."""
    from hotfloat.bundle import load_bundle, pack
    from hotfloat.ledger import State
    from hotfloat.validator import Outcome, Pipeline
    from hotfloat.verdict import Status

    from ..conftest import calibrated
    from ..validator.test_pipeline import Scripted

    records = {"NVIDIA H200": calibrated(21, record="calibration-h200.json")}
    records["NVIDIA H100 80GB HBM3"] = calibrated(
        2, record="calibration-h100-triton.json"
    )  # the counts of both records

    def runs(gpu, *scores):
        return [Outcome(Status.PASS, [], qualified_record("PASS", s, calibration=records[gpu])) for s in scores]

    db, ids = tmp_path / "l.db", []
    with Ledger(db) as led:
        for name, answers, through in (
            ("h200", runs("NVIDIA H200", 0.03, 0.02, 0.025), State.SCORED),
            ("h100", runs("NVIDIA H100 80GB HBM3", 0.0175, 0.0128), State.SCORED),
            ("waiting", runs("NVIDIA H100 80GB HBM3", 0.02), State.QUALIFIED),
        ):
            ids.append(led.receive(pack(load_bundle(make_bundle(name=name))))[0].id)
            Pipeline(led, Scripted(*answers), through=through, workers=1, backoff_s=0).run()
    code, out, err = hotfloat(capsys, "validator", "status", "--ledger", str(db), "--json")
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)["submissions"]}
    full, provisional, waiting = (rows[i] for i in ids)
    assert full["calibration"]["records"] == "calibration-h200.json x3" and full["calibration"]["worth"] == "full"
    assert full["calibration"]["bound"] < 0.01 and full["crown"] == "winner"
    assert provisional["calibration"] == {
        "records": "calibration-h100-triton.json x2",
        "bound": pytest.approx(0.6028, abs=1e-4),
        "worth": "provisional",
    }
    assert provisional["state"] == "scored" and provisional["crown"] is None
    got = waiting["calibration"]
    assert (waiting["state"], got["records"], round(got["bound"], 3), got["worth"]) == (
        "qualified",
        "calibration-h100-triton.json",
        0.776,
        None,
    )
    assert "MISSES ITS TARGETS" in got["line"]
    code, out, _ = hotfloat(capsys, "validator", "status", "--ledger", str(db))
    assert code == 0 and "PROVISIONAL" in out and "calibration-h200.json" in out


def test_status_at_80_columns_prints_each_reason_whole_beneath_the_table(capsys, make_bundle, tmp_path, monkeypatch):
    from hotfloat.ledger import State

    db = str(tmp_path / "l.db")
    hotfloat(capsys, "validator", "submit", str(make_bundle()), "--ledger", db)
    why = "verify: activation.silu_and_mul:default bf16 T=8,D=64: wrote out[3,2] wrong by 0.5 (tolerance 0.01)"
    with Ledger(db) as led:
        led.advance(1, State.RECEIVED, State.FAILED, why)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = hotfloat(capsys, "validator", "status", "--ledger", db)
    assert code == 0 and max(map(len, out.splitlines())) <= 80, out
    assert why in " ".join(line.strip() for line in out.split("1: ", 1)[1].splitlines())


def test_status_help_says_it_reads_the_ledger_and_never_creates_it(capsys, tmp_path):
    code, out, _ = hotfloat(capsys, "validator", "status", "--help")
    assert code == 0 and "created if missing" not in out and "never" in out
    code, _, err = hotfloat(capsys, "validator", "status", "--ledger", str(tmp_path / "none.db"))
    assert code == 2 and "no ledger here" in err and not (tmp_path / "none.db").exists()
