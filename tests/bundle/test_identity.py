"""Golden vectors pin the identity scheme: any change to it would orphan every on-chain commitment."""

import hashlib
import struct

from hotfloat.bundle import bundle_identity, load_bundle


def test_golden_empty():
    assert bundle_identity({}) == hashlib.sha256(b"").hexdigest()


def test_golden_two_files():
    files = {"b.py": b"x", "a.toml": b""}
    expected = hashlib.sha256(
        struct.pack(">I", 6)
        + b"a.toml"
        + struct.pack(">Q", 0)
        + struct.pack(">I", 4)
        + b"b.py"
        + struct.pack(">Q", 1)
        + b"x"
    ).hexdigest()
    assert bundle_identity(files) == expected == "3ae91e842e34c208075d562d92fbf6cde11915ecd7d286e9cb1491dfebc0d834"


def test_length_prefix_prevents_boundary_shifts():
    assert bundle_identity({"ab": b"c"}) != bundle_identity({"a": b"bc"})


def test_independent_of_directory_name_and_mtime(make_bundle):
    a = make_bundle(name="one")
    b = make_bundle(name="two")
    (b / "manifest.toml").write_text((a / "manifest.toml").read_text().replace("two", "one"))
    import os

    os.utime(b / "kernels" / "k.py", (0, 0))
    assert load_bundle(a).identity == load_bundle(b).identity


def test_changes_with_content(make_bundle):
    root = make_bundle()
    before = load_bundle(root).identity
    (root / "kernels" / "k.py").write_text("def run(x, out):\n    pass\n")
    assert load_bundle(root).identity != before
