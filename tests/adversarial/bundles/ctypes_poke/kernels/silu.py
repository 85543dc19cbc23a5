"""Exploit: use ctypes to read raw memory behind Python's back (hunting for the reference in the address space)."""
import ctypes


def silu_and_mul(x, out):
    ctypes.string_at(0x1000, 64)
    out.zero_()
