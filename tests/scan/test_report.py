"""Findings are attributed to the ops whose source reaches them through relative imports."""

from hotfloat.bundle import load_bundle
from hotfloat.scan import scan_bundle


def test_clean_bundle(make_bundle):
    report = scan_bundle(load_bundle(make_bundle()))
    assert report.clean
    assert [o.op for o in report.ops] == ["activation.silu_and_mul:default"]


def test_violation_in_imported_helper_taints_the_op(make_bundle):
    root = make_bundle(
        "from .helper import f\ndef run(x, out):\n    f()\n",
        files={"kernels/helper.py": "import socket\ndef f():\n    pass\n"},
    )
    report = scan_bundle(load_bundle(root))
    assert not report.clean
    (op,) = report.ops
    assert op.files == ["kernels/helper.py", "kernels/k.py"]
    assert op.findings == [
        "kernels/helper.py:1: import of 'socket' is not allowed: socket is not on the allow-list of "
        "what kernels may use (docs/security.md, 'Scan allow-list')"
    ]


def test_a_module_another_file_imports_is_refused_through_that_file(make_bundle):
    helper = "import torch as t\nimport triton\ndef f():\n    pass\n"
    kernel = (
        "from . import helper\nfrom .helper import t as tt\ndef run(x, out):\n"
        "    helper.t.utils.collect_env.run('id')\n    getattr(helper, 'triton').runtime\n    helper.f()\n"
    )
    report = scan_bundle(load_bundle(make_bundle(kernel, files={"kernels/helper.py": helper})))
    (op,) = report.ops
    assert [f.split(": ", 1)[0] for f in op.findings] == ["kernels/k.py:2", "kernels/k.py:4", "kernels/k.py:5"]
    assert all("is a module (or a restricted member) in a bundle file" in f for f in op.findings)


def test_unreferenced_files_are_scanned_too(make_bundle):
    root = make_bundle(files={"kernels/unused.py": "import os\n"})
    report = scan_bundle(load_bundle(root))
    assert not report.clean
    assert report.ops[-1].op == "(unreferenced files)"
    assert report.ops[0].clean


def test_a_bundle_module_hands_out_the_public_names_its_file_binds(make_bundle):
    """`from . import helper` stands for that file: `helper.layout` is its own function even though library types have
    a `layout` attribute, and nothing else (no private name, nothing the file does not bind) comes through it."""
    helper = "def layout(w):\n    return w\ndef _secret(w):\n    return w\n"
    kernel = (
        "from . import helper as h\ndef run(x, out):\n    out.copy_(h.layout(x)[:, : x.shape[1] // 2])\n"
        "    h._secret(x)\n    h.tofile(x)\n"
    )
    (op,) = scan_bundle(load_bundle(make_bundle(kernel, files={"kernels/helper.py": helper}))).ops
    assert [f.split(": ", 1)[0] for f in op.findings] == ["kernels/k.py:4", "kernels/k.py:5"]
