"""copies/library.py: the committed fingerprints of examples/ are today's, and the library holds what it says."""

import json
from pathlib import Path

from hotfloat.copies.fingerprint import VERSION
from hotfloat.copies.library import EXAMPLES, example_works, reference_library

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_example_fingerprints_are_todays():
    committed = json.loads(EXAMPLES.read_text())
    fresh = {k: v.model_dump() for k, v in example_works(ROOT / "examples").items()}
    assert committed == fresh, "examples/ or the fingerprints changed: run tools/copy_table.py --write-library"


def test_the_library_holds_examples_templates_and_adapters():
    lib = reference_library()
    assert {"examples/silu_triton", "template/attention.prefill"} <= set(lib.works)
    assert lib.templates == {w for w in lib.works if w.startswith("template/")}
    assert all(fp.version == VERSION for fp in lib.works.values())
    assert lib.generic < lib.everything and len(lib.everything - lib.generic) > 500
