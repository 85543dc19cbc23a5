"""`hotfloat chain` reading files it is handed: a crowns file and a stand-in chain refused in one error line."""

from __future__ import annotations

import os

import pytest

from hotfloat.cli.main import main


def hotfloat(capsys, *argv):
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    return done.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    "text,why",
    [
        (
            '[{"winner": "a", "runner_up": null, "weights": {"a": NaN}, "reason": ""}]',
            "0.weights.a: Input should be a finite",
        ),
        (
            '[{"winner": "a", "runner_up": "b", "weights": {"a": 0.9, "b": 0.9}, "reason": ""}]',
            "more than the whole pool",
        ),
        ("{}", "crowns: Input should be a valid array"),
    ],
)
def test_weights_refuses_crowns_that_are_not_settled_crowns(capsys, tmp_path, text, why):
    crowns = tmp_path / "crowns.json"
    crowns.write_text(text)
    code, err = hotfloat(
        capsys,
        "chain",
        "weights",
        "--crowns",
        str(crowns),
        "--netuid",
        "1",
        "--network",
        f"standin:{tmp_path}/none.json",
        "--ledger",
        str(tmp_path / "l.db"),
        "--dry-run",
    )
    assert code == 2 and err.startswith(f"error: {crowns}: ") and why in err and err.count("\n") == 1, err


def test_weights_refuses_a_crowns_file_that_never_ends(capsys, tmp_path):
    fifo = tmp_path / "crowns.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        code, err = hotfloat(
            capsys,
            "chain",
            "weights",
            "--crowns",
            str(path),
            "--netuid",
            "1",
            "--network",
            f"standin:{tmp_path}/none.json",
            "--ledger",
            str(tmp_path / "l.db"),
            "--dry-run",
        )
        assert (code, err) == (2, f"error: {path}: crowns file: not a regular file\n")


@pytest.mark.parametrize("text", ["[1, 2]", '{"blocks": []}', '{"constants": {"a": 1', "[" * 5000 + "]" * 5000])
def test_advance_refuses_a_file_that_is_not_a_standin_chain(capsys, tmp_path, text):
    chain = tmp_path / "chain.json"
    chain.write_text(text)
    code, err = hotfloat(capsys, "chain", "standin", "advance", str(chain), "1")
    assert code == 2 and err.startswith(f"error: stand-in chain {chain} is ") and err.count("\n") == 1, err


@pytest.mark.parametrize("columns", ["80", "40"])
def test_package_prints_the_identity_to_commit_whole_at_any_width(capsys, monkeypatch, make_bundle, columns):
    """The identity is what a miner copies into their commitment: a table cutting it to fit the terminal would hand
    them a prefix."""
    from hotfloat.bundle import load_bundle

    bundle = make_bundle()
    monkeypatch.setenv("COLUMNS", columns)
    with pytest.raises(SystemExit) as done:
        main(["chain", "package", str(bundle)])
    out = capsys.readouterr().out
    assert done.value.code == 0 and load_bundle(bundle).identity in out.split(), out


@pytest.mark.parametrize(
    "kernel, line",
    [
        ("def run(x, out:\n    pass\n", "kernels/k.py:1: syntax error"),
        ("import os\n\n\ndef run(x, out):\n    os.system('x')\n", "kernels/k.py:1: import of 'os' is not allowed"),
    ],
)
def test_package_submit_and_hash_refuse_what_scan_refuses_with_scans_line(capsys, tmp_path, make_bundle, kernel, line):
    bundle = make_bundle(kernel)
    for argv in (
        ("hash", str(bundle)),
        ("chain", "package", str(bundle), "--out", str(tmp_path / "b.tar.gz")),
        ("chain", "submit", str(bundle), "--url", "https://x.org/b.tar.gz", "--netuid", "1", "--dry-run"),
    ):
        code, err = hotfloat(capsys, *argv)
        assert code == 1 and err.startswith(f"error: scan refuses {bundle}: {line}") and err.count("\n") == 1, err
    assert not (tmp_path / "b.tar.gz").exists()


@pytest.mark.parametrize(
    "text, why",
    [
        ("{", "not a reveal file"),
        ('{"netuid": 7}', "not a reveal file (hotkey: Field required"),
        (
            '{"netuid": 7, "hotkey": "5X", "identity": "'
            + "a" * 64
            + '", "url": "https://x.org/a", "salt": "'
            + "b" * 32
            + '"}',
            "its digest was never committed",
        ),
    ],
)
def test_reveal_refuses_a_file_that_is_not_a_committed_reveal(capsys, tmp_path, text, why):
    path = tmp_path / "r.json"
    path.write_text(text)
    code, err = hotfloat(capsys, "chain", "reveal", str(path), "--network", f"standin:{tmp_path}/none.json")
    assert code == 2 and err.startswith(f"error: {path}: ") and why in err and err.count("\n") == 1, err
