"""`hotfloat serve ... --gpu N` refuses in one line what cannot be pinned: the compiler, a CPU service, and a GPU
this host does not have (here: no NVML at all; the count check is tests/sandbox/test_gpus.py's)."""

from __future__ import annotations

import sys

import pytest

from hotfloat.cli.main import main


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ("compiler", "--device", "cuda", "--gpu", "0"),
            "--gpu applies to admission and qualification with --device cuda",
        ),
        (("qualification", "--gpu", "1"), "--gpu applies to admission and qualification with --device cuda"),
        (("qualification", "--device", "cuda", "--gpu", "9"), "--gpu 9: NVML cannot list this host's GPUs"),
        (("admission", "--device", "cuda", "--gpu", "0"), "--gpu 0: NVML cannot list this host's GPUs"),
    ],
)
def test_a_gpu_that_cannot_be_pinned_is_one_error_line_exit_2(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # this CPU host: no NVML, whatever is installed
    token = tmp_path / "token"
    token.write_text("t" * 32)
    with pytest.raises(SystemExit) as done:
        main(["serve", *argv, "--socket", str(tmp_path / "s.sock"), "--token-file", str(token)])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "s.sock").exists()


def test_gpu_must_be_an_index():
    with pytest.raises(SystemExit) as done:
        main(["serve", "qualification", "--gpu", "-1"])
    assert done.value.code == 2
