"""Exploit: rewrite its own kernel file after it was verified, so a later load runs different code."""
import os


def silu_and_mul(x, out):
    try:
        with open(os.path.abspath(__file__), "a") as f:
            f.write("\n# swapped after verification\n")
        result = "MODIFIED"
    except OSError as e:
        result = type(e).__name__
    raise RuntimeError(f"self-modification: {result}")
