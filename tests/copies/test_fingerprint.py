"""copies/fingerprint.py: an op is the code its entry reaches, a file all of its code, and a bundle too large to
compare is refused in one line."""

import pytest

from hotfloat.bundle import bundle_from_files
from hotfloat.copies.fingerprint import MAX_FINGERPRINTS, fingerprint
from hotfloat.errors import InputError


def test_unreachable_definitions_count_for_the_file_but_not_the_op(kernel_files, kernel):
    base = fingerprint(bundle_from_files(kernel_files()))
    padded = fingerprint(bundle_from_files(kernel_files(kernel + "\n\ndef unused(a):\n    return a.sum(dim=0) * 3\n")))
    assert padded.ops == base.ops
    assert set(padded.files["kernels/norm.py"]) > set(base.files["kernels/norm.py"])
    assert base.sources == {"norm.rmsnorm:default": "kernels/norm.py"}


def test_files_that_do_not_parse_have_no_fingerprints(kernel_files):
    fp = fingerprint(bundle_from_files(kernel_files(extra={"kernels/broken.py": "def f(:\n"})))
    assert "kernels/broken.py" not in fp.files and fp.ops["norm.rmsnorm:default"]


def test_a_bundle_too_large_to_compare_is_refused(kernel_files):
    many = "".join(f"def f{i}(x):\n    return x.m{i}().sum(dim=0) * 2 + x.n{i}().mean()\n" for i in range(3000))
    with pytest.raises(InputError, match=f"over the limit of {MAX_FINGERPRINTS}"):
        fingerprint(bundle_from_files(kernel_files(extra={"kernels/many.py": many})))
