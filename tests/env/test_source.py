"""The source digest: what ran, by content. A checkout reports the digest an image built from it would carry as its
revision, every edit moves it where a git revision reads `+dirty` whatever the edit, and identities from before it
say so instead of failing to load."""

from __future__ import annotations

import sys
from pathlib import Path

from hotfloat.env import collect
from hotfloat.env.source import CHECKOUT, digest_of, located, package_files, source_digest, tool_script
from hotfloat.image.build import source_files
from hotfloat.qualify import load_evidence

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_reports_the_revision_an_image_built_from_it_would_carry():
    assert CHECKOUT == ROOT and set(located()) == {
        "libs/hotfloat/hotfloat",
        "services/hotfloat_services",
        "libs/hotfloat_sglang/hotfloat_sglang",
    }
    image = "src-sha256:" + digest_of([(rel, p.read_bytes()) for rel, p in source_files(ROOT)])
    assert source_digest() == image == collect().source


def test_any_edit_moves_the_digest_and_caches_do_not(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")

    def digest():
        return digest_of([(n, p.read_bytes()) for n, p in package_files(pkg, "libs/pkg")])

    before = digest()
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert digest() == before and [n for n, _ in package_files(pkg, "libs/pkg")] == ["libs/pkg/a.py"]
    (pkg / "a.py").write_text("x = 2\n")
    assert digest() != before


def test_a_tools_script_run_as_main_is_part_of_what_ran(monkeypatch):
    script = ROOT / "tools" / "calibration_tables.py"
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(script), raising=False)
    assert tool_script() == ("tools/calibration_tables.py", script)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(ROOT / "libs" / "x.py"))
    assert tool_script() is None


def test_an_identity_from_before_the_digest_says_it_was_not_recorded():
    env = load_evidence(ROOT / "docs" / "qualify-runs" / "evidence-h100-llama8b-attention_prefill_triton.json.xz").env
    assert env.source is None and env.absent["source"].startswith("not recorded: collected before")
    assert (
        env.revision == "2eaa4c5239e3a9ce703475a419996a11ef61dc36+dirty"
    )  # the hint issue 50 found older than what ran
