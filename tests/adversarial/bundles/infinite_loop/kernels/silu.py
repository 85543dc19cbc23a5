"""Exploit: never return (wedge the validator so honest competitors cannot be verified)."""


def silu_and_mul(x, out):
    while True:
        pass
