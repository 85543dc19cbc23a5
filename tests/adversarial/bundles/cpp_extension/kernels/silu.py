"""Exploit: compile and load native code at import time, escaping every Python-level check."""
from torch.utils.cpp_extension import load_inline

_mod = load_inline(name="evil", cpp_sources="int f() { return 0; }", functions=["f"])


def silu_and_mul(x, out):
    out.zero_()
