"""`hotfloat bench` end to end on CPU: table, --json, --save and --plot, and bad input as one error line."""

import json
from pathlib import Path

import pytest

from hotfloat.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_bench_json_save_and_plot(tmp_path, capsys):
    png, saved = tmp_path / "b.png", tmp_path / "b.json"
    with pytest.raises(SystemExit) as exit_:
        main(["bench", str(EXAMPLES / "silu_triton"), "--device", "cpu", "--shape", "T=2,D=256", "--json",
              "--plot", str(png), "--save", str(saved)])
    out = capsys.readouterr()
    assert exit_.value.code == 0, out.err
    report = json.loads(out.out)
    assert report["status"] == "PASS" and report["meaningful"] is False
    assert json.loads(saved.read_text())["rows"] == report["rows"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_bad_input_is_one_error_line_exit_2(make_bundle, capsys):
    for args in (["/nonexistent"], [str(EXAMPLES / "silu_triton"), "--device", "cpu", "--shape", "T=0"],
                 [str(make_bundle(files={"kernels/x.so": b"\x7fELF"})), "--device", "cpu"]):
        with pytest.raises(SystemExit) as exit_:
            main(["bench", *args])
        err = capsys.readouterr().err
        assert exit_.value.code == 2, (args, err)
        assert err.startswith("error: ") and err.strip().count("\n") == 0, err
