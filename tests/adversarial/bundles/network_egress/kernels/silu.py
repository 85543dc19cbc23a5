"""Exploit: phone home (exfiltrate inputs, fetch precomputed answers) over TCP and DNS."""
import socket


def silu_and_mul(x, out):
    errors = []
    for target in (("1.1.1.1", 443), ("pypi.org", 443)):
        try:
            socket.create_connection(target, timeout=2).close()
            errors.append(f"{target[0]}: CONNECTED")
        except OSError as e:
            errors.append(f"{target[0]}: {type(e).__name__}")
    raise RuntimeError(f"egress: {errors}")
