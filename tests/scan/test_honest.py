"""Honest bundles stay clean: every example the demo expects to run, the seams' fixtures and the template of every slot
(tests/authoring scans what the Cacheon import writes; tests/adversarial holds which cheats scan is meant to catch)."""

import tomllib
from pathlib import Path

import pytest

from hotfloat.authoring.template import write_template
from hotfloat.bundle import load_bundle
from hotfloat.scan import scan_bundle
from hotfloat.slots import SLOTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if (p / "manifest.toml").exists())
REFUSED_BY_SCAN = {"silu_banned_import"}
"""Examples meant to be refused by scan (examples/expected.toml says FAIL for its import of socket)."""
FIXTURES = sorted(
    p.parent
    for p in (ROOT / "tests" / "seams" / "fixtures").glob("*/manifest.toml")
    if p.parent.name != "live_exact"  # SGLang's own kernels, served unscanned by the live tier's reference arm
)


def _findings(root: Path) -> list[str]:
    return [f for op in scan_bundle(load_bundle(root)).ops for f in op.findings]


@pytest.mark.parametrize("root", EXAMPLES, ids=lambda p: p.name)
def test_examples_scan_as_expected(root):
    assert (_findings(root) == []) is (root.name not in REFUSED_BY_SCAN), _findings(root)


@pytest.mark.parametrize("root", FIXTURES, ids=lambda p: p.name)
def test_fixture_bundles_scan_clean(root):
    assert _findings(root) == []


@pytest.mark.parametrize("slot", sorted(SLOTS))
def test_every_template_scans_clean(slot, tmp_path):
    write_template(tmp_path / "b", [slot])
    assert _findings(tmp_path / "b") == []


def test_the_refused_example_is_the_one_the_demo_expects_to_fail():
    expected = tomllib.loads((ROOT / "examples" / "expected.toml").read_text())
    assert all(expected[name] == "FAIL" for name in REFUSED_BY_SCAN)
