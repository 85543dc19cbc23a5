"""The numbers the docs quote about the committed H200 calibration files are the ones those files give
(tools/calibration_tables.py regenerates them; here it only checks)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))  # the script's own folder, as `python tools/calibration_tables.py` has it
spec = importlib.util.spec_from_file_location("calibration_tables", ROOT / "tools" / "calibration_tables.py")
tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tables)


def test_every_generated_block_of_the_docs_matches_the_committed_files(capsys):
    assert tables.main(["--check"]) == 0, capsys.readouterr().err


def test_a_block_that_drifted_is_named_and_rewritten(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "doc.md"
    doc.write_text("Before.\n<!-- generated: twin -->\n| fused | 10 | 8 |\n<!-- /generated -->\nAfter.\n")
    monkeypatch.setattr(tables, "DOCS", [doc])
    assert tables.main(["--check"]) == 1 and "doc.md: twin" in capsys.readouterr().err
    assert tables.main([]) == 0 and tables.main(["--check"]) == 0
    text = doc.read_text()
    assert (
        text.startswith("Before.\n") and text.endswith("After.\n") and "| fused_add_rmsnorm_triton | 10 | 9 |" in text
    )
