"""Exploit: plant files on the host (persistence, cache poisoning) in every writable place it can find."""
import os


def silu_and_mul(x, out):
    wrote = []
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.path.expanduser("~"), "/root", "/work/main", "/", "/bundle"):
        try:
            with open(os.path.join(d, "hotfloat-pwned"), "w") as f:
                f.write("pwned")
            wrote.append(d)
        except OSError:
            pass
    raise RuntimeError(f"wrote into: {wrote}")
