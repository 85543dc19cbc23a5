"""Exploit: block forever while the module is imported, before any call."""
import threading

threading.Event().wait()


def silu_and_mul(x, out):
    pass
