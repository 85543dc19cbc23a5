"""Locks: exact pins only, and every difference between a lock and what got installed is named."""

import pytest

from hotfloat.errors import InputError
from hotfloat.image.locks import (canonical, debian_pins, differences, dpkg_status, lock_without, python_pins,
                                  unmet_requirements)

from .conftest import STATUS, make_wheel

LOCK = """torch==2.13.0+cpu \\
    --hash=sha256:aaaa
    # via -r stack.in
Nvidia_Cutlass.DSL==4.8.1 \\
    --hash=sha256:bbbb
"""


def test_pins_are_read_with_canonical_names(tmp_path):
    lock = tmp_path / "r.lock"
    lock.write_text(LOCK)
    assert python_pins(lock) == {"torch": "2.13.0+cpu", "nvidia-cutlass-dsl": "4.8.1"}
    assert canonical("Nvidia_Cutlass.DSL") == "nvidia-cutlass-dsl"


@pytest.mark.parametrize("text", ["torch>=2.0 \\\n    --hash=sha256:aa\n", "torch==2.13.0\n", ""])
def test_unpinned_or_unhashed_locks_are_refused(tmp_path, text):
    lock = tmp_path / "r.lock"
    lock.write_text(text)
    with pytest.raises(InputError):
        python_pins(lock)


def test_lock_without_drops_whole_entries():
    kept = lock_without(LOCK, {"torch"})
    assert kept.startswith("Nvidia_Cutlass.DSL==4.8.1") and "aaaa" not in kept and "via" not in kept


def test_dpkg_status_keeps_installed_packages_only():
    assert dpkg_status(STATUS) == {"base-files": "12.4+deb12u1", "python3": "3.11.2-1+b1"}


def test_differences_name_changed_added_and_missing_packages():
    found = differences("debian", {"a": "1", "b": "2"}, {"a": "1.1", "c": "3"})
    assert found == ["debian a: lock 1, resolved 1.1", "debian b: lock 2, resolved absent",
                     "debian c: lock absent, resolved 3"]
    assert differences("debian", {"a": "1"}, {"a": "1"}) == []


def test_debian_lock_format(tmp_path):
    lock = tmp_path / "debian.lock"
    lock.write_text("# header\npython3=3.11.2-1+b1\n")
    assert debian_pins(lock) == {"python3": "3.11.2-1+b1"}
    lock.write_text("python3\n")
    with pytest.raises(InputError, match="expected package=version"):
        debian_pins(lock)


def test_unmet_requirements_catch_a_mismatched_pair(tmp_path):
    import zipfile

    site = tmp_path / "site"
    site.mkdir()
    for name, version, requires in (("torchlike", "1.0", ("cudart==13.0.96", "extra-only; extra == 'x'")),
                                    ("cudart", "12.8.0", ())):
        with zipfile.ZipFile(make_wheel(tmp_path, name, version, requires)) as z:
            z.extractall(site)
    assert unmet_requirements(site) == ["torchlike needs cudart==13.0.96, installed 12.8.0"]
