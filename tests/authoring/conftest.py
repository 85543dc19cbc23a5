"""Cacheon-style layouts written here (never copied) for the import tests, and the import run through the CLI."""

from pathlib import Path

import pytest


def _write_layout(root: Path, manifest: str, files: dict[str, str]) -> Path:
    """A Cacheon-style example written here (never copied): manifest.toml, kernels/, metadata/."""
    for rel, text in {"manifest.toml": manifest, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def write_layout():
    return _write_layout


@pytest.fixture
def cacheon_op() -> str:
    """One Cacheon op's manifest, formatted with id, slot, src, entry and extra lines."""
    return (
        'bundle_id = "{id}"\nabi_version = "cacheon-op-abi-v0"\n\n[[ops]]\nslot = "{slot}"\n'
        'source = "kernels/{src}.py"\nentry = "{entry}"\ndtypes = ["bfloat16"]\n{extra}'
    )


@pytest.fixture
def run_import(capsys):
    def run(src: Path, out: Path) -> tuple[str, str]:
        """`hotfloat bundle import SRC --out OUT` in this process: (stdout, stderr) flattened to single spaces."""
        from hotfloat.cli.main import main

        with pytest.raises(SystemExit) as done:
            main(["bundle", "import", str(src), "--out", str(out)])
        said = capsys.readouterr()
        assert done.value.code == 0, said.err
        return " ".join(said.out.split()), " ".join(said.err.split())

    return run
