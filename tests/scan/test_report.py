"""Findings are attributed to the ops whose source reaches them through relative imports."""

from hotfloat.bundle import load_bundle
from hotfloat.scan import scan_bundle


def test_clean_bundle(make_bundle):
    report = scan_bundle(load_bundle(make_bundle()))
    assert report.clean
    assert [o.op for o in report.ops] == ["activation.silu_and_mul:default"]


def test_violation_in_imported_helper_taints_the_op(make_bundle):
    root = make_bundle("from .helper import f\ndef run(x, out):\n    f()\n", files={"kernels/helper.py": "import socket\ndef f():\n    pass\n"})
    report = scan_bundle(load_bundle(root))
    assert not report.clean
    (op,) = report.ops
    assert op.files == ["kernels/helper.py", "kernels/k.py"]
    assert op.findings == ["kernels/helper.py:1: import of 'socket' is not allowed (allowed: __future__, abc, collections, "
                           "cutlass, dataclasses, enum, functools, itertools, math, numbers, numpy, operator, torch, triton, typing)"]


def test_unreferenced_files_are_scanned_too(make_bundle):
    root = make_bundle(files={"kernels/unused.py": "import os\n"})
    report = scan_bundle(load_bundle(root))
    assert not report.clean
    assert report.ops[-1].op == "(unreferenced files)"
    assert report.ops[0].clean
