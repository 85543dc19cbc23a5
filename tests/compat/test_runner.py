"""compat / chain-compat against the real pinned packages (pass) and against altered copies shadowing them (fail)."""

import os
import sys
import textwrap
from pathlib import Path

import pytest

from hotfloat.compat import BITTENSOR_PIN, SGLANG_PIN, check, engine_python
from hotfloat.errors import InfrastructureError
from hotfloat.verdict import Status


def shadow(root: Path, dist: str, version: str, files: dict[str, str]) -> Path:
    """A package directory placed first on PYTHONPATH, with its own dist-info, standing in for an upgraded release."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    info = root / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return root


@pytest.fixture
def pythonpath(monkeypatch):
    def use(path: Path):
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")]))

    return use


def rows(report):
    return {r.name: r for r in report.rows}


def test_chain_compat_passes_on_the_pinned_sdk():
    report = check("bittensor")
    assert report.status is Status.PASS, [r for r in report.rows if r.status is not Status.PASS]
    assert rows(report)["bittensor version"].detail == f"{BITTENSOR_PIN} (pin {BITTENSOR_PIN})"


def test_chain_compat_fails_on_an_altered_sdk(tmp_path, pythonpath):
    pythonpath(
        shadow(
            tmp_path,
            "bittensor",
            BITTENSOR_PIN,
            {
                "bittensor/__init__.py": """
        class Wallet:
            def __init__(self, name, hotkey_name, path=None):
                self.hotkey = self.coldkey = None
        """
            },
        )
    )
    report = check("bittensor")
    got = rows(report)
    assert report.status is Status.FAIL
    assert got["bittensor version"].status is Status.PASS
    assert got["Wallet"].status is Status.FAIL and "missing parameter(s) hotkey" in got["Wallet"].detail
    assert got["Subtensor"].status is Status.FAIL


def test_sglang_version_differing_from_the_pin_fails(tmp_path, pythonpath):
    pythonpath(shadow(tmp_path, "sglang", "0.5.24", {"sglang/__init__.py": ""}))
    got = rows(check("sglang", python=sys.executable))
    assert got["sglang version"].status is Status.FAIL
    assert got["sglang version"].detail == f"0.5.24 DIFFERS from pin {SGLANG_PIN}"


def test_an_altered_seam_signature_fails(tmp_path, pythonpath):
    pythonpath(
        shadow(
            tmp_path,
            "sglang",
            SGLANG_PIN,
            {
                "sglang/__init__.py": "",
                "sglang/srt/__init__.py": "",
                "sglang/srt/layers/__init__.py": "",
                "sglang/srt/layers/activation.py": """
            class SiluAndMul:
                def forward_native(self, x):
                    pass
                def forward_cuda(self, inp):
                    pass
            """,
                "sglang/srt/layers/layernorm.py": """
            class RMSNorm:
                def forward_cuda(self, x, post_residual_addition=None, residual=None):
                    pass
            """,
            },
        )
    )
    pythonpath(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang")  # the seams' own rows, read here
    got = rows(check("sglang", python=sys.executable))
    assert got["sglang version"].status is Status.PASS and got["seam registry"].status is Status.PASS
    assert got["SiluAndMul.forward_native"].status is Status.PASS
    assert got["SiluAndMul.forward_cuda"].status is Status.FAIL
    assert "missing parameter(s) x" in got["SiluAndMul.forward_cuda"].detail
    assert "out of order" in got["RMSNorm.forward_cuda"].detail
    assert "no attribute 'forward_native'" in got["RMSNorm.forward_native"].detail
    assert got["Engine.generate"].status is Status.FAIL


def test_a_missing_seam_registry_fails_its_row_and_hides_no_table_row(tmp_path, pythonpath):
    pythonpath(shadow(tmp_path, "sglang", SGLANG_PIN, {"sglang/__init__.py": ""}))
    got = rows(check("sglang", python=sys.executable))  # this interpreter has no hotfloat_sglang on its path
    assert got["seam registry"].status is Status.FAIL and "hotfloat_sglang" in got["seam registry"].detail
    assert "RadixAttention.forward" in got and "SiluAndMul.forward_cuda" not in got


def test_compat_passes_on_the_pinned_engine_venv():
    assert Path(engine_python()).exists(), "`make engine` builds the engine venv (make test does)"
    report = check("sglang")
    assert report.status is Status.PASS, [r for r in report.rows if r.status is not Status.PASS]
    assert rows(report)["sglang version"].detail == f"{SGLANG_PIN} (pin {SGLANG_PIN})"


def test_a_missing_interpreter_is_an_infrastructure_fault(tmp_path):
    with pytest.raises(InfrastructureError, match="make engine"):
        check("sglang", python=str(tmp_path / "python"))
