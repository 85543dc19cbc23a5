"""preflight: three questions answered separately, failures named; the behavioral one runs the real verify."""

import json

import pytest
from click.testing import CliRunner

from hotfloat.cli.main import cli, main
from hotfloat.env import collect
from hotfloat.preflight import device_checks, preflight, static_checks
from hotfloat.verdict import Status


def _rows(checks):
    return {c.name: c for c in checks}


def test_cpu_device_is_ready():
    rows = _rows(device_checks(collect(), "cpu"))
    assert rows["torch"].status is Status.PASS and rows["device"].status is Status.PASS


def test_cpu_torch_on_a_cuda_request_fails():
    rows = _rows(device_checks(collect(), "cuda"))
    assert rows["torch CUDA"].status is Status.FAIL and "CPU build of Torch" in rows["torch CUDA"].detail


def test_torch_built_for_a_newer_cuda_than_the_driver_fails(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    env = collect().model_copy(update={"driver_cuda": "12.4", "driver": "550.54"})
    rows = _rows(device_checks(env, "cuda"))
    assert rows["torch CUDA vs driver"].status is Status.FAIL
    assert "CUDA 13.0; driver 550.54 supports up to 12.4" in rows["torch CUDA vs driver"].detail


def test_torch_that_differs_from_the_image_lock_fails(tmp_path, monkeypatch):
    ident = tmp_path / "image.json"
    ident.write_text(json.dumps({"name": "worker", "flavor": "cuda", "python": {"torch": "2.13.0"}}))
    monkeypatch.setenv("HOTFLOAT_IMAGE_IDENTITY", str(ident))
    rows = _rows(device_checks(collect(), "cpu"))
    assert rows["torch vs image lock"].status is Status.FAIL and "pins 2.13.0" in rows["torch vs image lock"].detail


def test_static_rows_always_answer():
    rows = list(static_checks())
    assert rows and all(r.question == "static" for r in rows)
    assert {r.name.split(":")[0] for r in rows} == {"compat", "chain-compat"}


def test_the_sglang_version_row_names_the_interpreter_it_was_found_in_as_env_does():
    """`env` describes this interpreter, preflight's compat rows the engine venv's: each names which, so an `env`
    without sglang beside a preflight whose sglang version PASSes is two interpreters, said, not a contradiction."""
    import sys

    from hotfloat.compat.runner import engine_python

    version = next(r for r in static_checks() if r.name == "compat: sglang version")
    if version.status is Status.PASS:
        assert version.detail.endswith(f" in {engine_python()}"), version.detail
    if collect().sglang is None:
        assert collect().absent["sglang"] == f"sglang is not installed in this interpreter ({sys.executable})"


@pytest.mark.timeout(900)
def test_controls_behave_on_this_host():
    report = preflight("cpu", ("behavioral",))
    rows = _rows(report.checks)
    assert rows["faithful control"].status is Status.PASS, rows["faithful control"].detail
    assert rows["broken control"].status is Status.PASS, rows["broken control"].detail  # it FAILed verify, as it must
    assert "verify says FAIL" in rows["broken control"].detail
    assert report.questions["behavioral"] is Status.PASS and report.failed == []


def test_cli_names_the_failed_question(capsys):
    with pytest.raises(SystemExit) as done:
        main(["preflight", "--device", "cuda", "--only", "device"])
    assert done.value.code == 1
    assert "error: preflight failed: device (FAIL)" in capsys.readouterr().err


def test_cli_table_fits_80_columns_unless_wide(capsys):
    widths = []
    for extra in ([], ["--wide"]):
        with pytest.raises(SystemExit):
            main(["preflight", "--device", "cuda", "--only", "device", *extra])
        widths.append(max(map(len, capsys.readouterr().out.splitlines())))
    assert widths[0] <= 80 < widths[1], widths


def test_cli_json_on_cpu():
    result = CliRunner().invoke(cli, ["preflight", "--only", "device", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["questions"]["device"] == "PASS" and data["env"]["torch"]
