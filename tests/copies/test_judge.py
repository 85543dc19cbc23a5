"""copies/judge.py: the library first, then earlier submissions in chain order; the first one copied is named."""

from hotfloat.bundle import bundle_from_files, load_bundle
from hotfloat.copies.containment import Earlier
from hotfloat.copies.fingerprint import fingerprint
from hotfloat.copies.judge import judge
from hotfloat.copies.library import reference_library

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_a_renamed_example_is_a_copy_of_the_reference_file():
    files = dict(load_bundle(ROOT / "examples" / "rmsnorm_triton").files)
    src = files["kernels/rmsnorm.py"].decode()
    files["kernels/rmsnorm.py"] = src.replace("x_ptr", "inp").replace("BLOCK", "TILE").replace("#", "# ...").encode()
    check = judge(fingerprint(bundle_from_files(files)), [], reference_library())
    assert check.copy_of == "copy_of:reference:examples/rmsnorm_triton/kernels/rmsnorm.py"


def test_the_first_committer_keeps_the_credit(kernel_files):
    first, second = (fingerprint(bundle_from_files(kernel_files(bundle_id=n))) for n in ("first", "second"))
    earlier = [Earlier("a" * 64, first), Earlier("b" * 64, second)]
    check = judge(fingerprint(bundle_from_files(kernel_files(bundle_id="third"))), earlier, reference_library())
    assert check.copy_of == "copy_of:" + "a" * 64 and check.compared == len(reference_library().works) + 2


def test_an_original_kernel_is_not_a_copy(kernel_files):
    check = judge(fingerprint(bundle_from_files(kernel_files())), [], reference_library())
    assert check.copied is None and check.copy_of is None and check.compared > 20
