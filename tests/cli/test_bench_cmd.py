"""`hotfloat bench` end to end on CPU: table, --json, --save and --plot, sandboxed unless --unsandboxed, and bad input
or a missing sandbox as one error line."""

import json
from pathlib import Path

import pytest

from hotfloat.cli.bench_cmd import bench
from hotfloat.cli.main import main
from hotfloat.sandbox import process

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_bench_json_save_and_plot(tmp_path, capsys):
    png, saved = tmp_path / "b.png", tmp_path / "b.json"
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "bench",
                str(EXAMPLES / "silu_triton"),
                "--device",
                "cpu",
                "--shape",
                "T=2,D=256",
                "--json",
                "--plot",
                str(png),
                "--save",
                str(saved),
            ]
        )
    out = capsys.readouterr()
    assert exit_.value.code == 0, out.err
    report = json.loads(out.out)
    assert report["status"] == "PASS" and report["meaningful"] is False
    assert report["sandboxed"] is True and {"namespaces", "seccomp"} <= set(report["bounds"])
    assert json.loads(saved.read_text())["rows"] == report["rows"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_host_without_matplotlib_keeps_the_saved_bench_and_says_why_there_is_no_plot(tmp_path, capsys, monkeypatch):
    """The engine payload carries no matplotlib: the bench's JSON and table must survive --plot there."""
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    png, saved = tmp_path / "b.png", tmp_path / "b.json"
    args = ["bench", str(EXAMPLES / "silu_triton"), "--device", "cpu", "--shape", "T=2,D=256", "--unsandboxed"]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--plot", str(png), "--save", str(saved)])
    out = capsys.readouterr()
    assert exit_.value.code == 0, out.err
    assert json.loads(saved.read_text())["status"] == "PASS" and not png.exists()
    assert "warning: no plot" in out.err and "silu" in out.out


def test_bench_bad_input_is_one_error_line_exit_2(make_bundle, capsys):
    for args in (
        ["/nonexistent"],
        [str(EXAMPLES / "silu_triton"), "--device", "cpu", "--shape", "T=0"],
        [str(make_bundle(files={"kernels/x.so": b"\x7fELF"})), "--device", "cpu"],
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["bench", *args])
        err = capsys.readouterr().err
        assert exit_.value.code == 2, (args, err)
        assert err.startswith("error: ") and err.strip().count("\n") == 0, err


def test_unsandboxed_warns_and_says_so_beside_the_table(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "bench",
                str(EXAMPLES / "silu_triton"),
                "--device",
                "cpu",
                "--shape",
                "T=2,D=256",
                "--stock",
                "none",
                "--unsandboxed",
            ]
        )
    out = capsys.readouterr()
    assert exit_.value.code == 0, out.err
    assert out.err.startswith("WARNING: --unsandboxed") and "sandbox: NONE (--unsandboxed)" in out.err
    assert "PASS" in out.out


def test_no_sandbox_fails_closed_with_one_error_line_exit_3(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bubblewrap
    process._probe.cache_clear()
    try:
        with pytest.raises(SystemExit) as exit_:
            main(["bench", str(EXAMPLES / "silu_triton"), "--device", "cpu", "--shape", "T=2,D=256"])
    finally:
        monkeypatch.undo()
        process._probe.cache_clear()
    err = capsys.readouterr().err
    assert exit_.value.code == 3, err
    assert err.startswith("error: bubblewrap") and "--unsandboxed" in err and err.strip().count("\n") == 0, err


def test_the_timeout_default_is_the_librarys():
    from hotfloat.bench.run import TIMEOUT_S

    assert next(p.default for p in bench.params if p.name == "timeout_s") == TIMEOUT_S


BENCH = ["bench", str(EXAMPLES / "silu_triton"), "--device", "cpu", "--shape", "T=2,D=256", "--stock", "none"]


def test_the_table_fits_80_columns_and_wide_shows_every_column(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    argv = BENCH
    widths = {}
    for wide in (False, True):
        with pytest.raises(SystemExit):
            main(argv + ["--wide"] * wide)
        out = capsys.readouterr().out
        widths[wide] = max(map(len, out.splitlines()))
        assert ("GB/s" in out) == wide and "ours/best" in out and "PASS" in out, out
    assert widths[False] <= 80 < widths[True], widths


@pytest.mark.parametrize("columns", [60, 200])
def test_the_table_honours_the_terminal_width(capsys, monkeypatch, columns):
    """COLUMNS is the width people read in: a narrower one folds the table's cells to it (cutting none), a wider one
    shows every column (the slot name whole), as --wide would."""
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.raises(SystemExit):
        main(BENCH)
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= columns and "…" not in out and "PASS" in out, out
    assert ("GB/s" in out and "activation.silu_and_mul " in out) == (columns == 200), out


def test_a_bundle_with_no_op_for_the_device_is_not_applicable_never_a_pass(tmp_path, capsys):
    """Every row timed only the stock kernels: exit 4 with the reason, as `verify` says N/A for the same bundle; the
    op's module, which needs a GPU to import, is never imported here."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text(
        "import torch\n\nDEVICE = torch.cuda.current_device()\n\n\ndef run(x, out):\n    out.zero_()\n"
    )
    (tmp_path / "manifest.toml").write_text(
        'bundle_id = "g"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
        'source = "kernels/k.py"\nentry = "run"\narchitectures = ["sm_90"]\n'
    )
    with pytest.raises(SystemExit) as exit_:
        main(["bench", str(tmp_path), "--device", "cpu", "--shape", "T=2,D=256", "--stock", "none"])
    out = capsys.readouterr()
    assert exit_.value.code == 4 and "N/A: no op of g is built for cpu" in out.err, out.err
